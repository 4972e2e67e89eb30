"""The labelled user-agent pool (also the ingest classifier's test corpus)."""

from __future__ import annotations

import re
from collections import Counter

from generator.agents import AGENTS, DEVICE_TYPES, ROLES

# Automated clients (HTTP libraries, scanners, link-preview fetchers) count as bots too;
# okhttp is an Android app's client: the phone.
BOT = re.compile(
    r"bot|crawl|spider|curl/|python-requests|wget|uptime|pingdom|httpclient|postman"
    r"|axios/|node-fetch|whatsapp|go-http-client|zgrab|nmap|censys|masscan|java/",
    re.I,
)


def rule_label(ua: str) -> str:
    """The device-class rules, first match wins, written apart from the generator."""
    u = ua.lower()
    if BOT.search(u):
        return "bot"
    android = "android" in u
    if "ipad" in u or "kindle" in u or "silk/" in u or (android and "mobile" not in u):
        return "tablet"
    if "iphone" in u or "ipod" in u or (android and "mobile" in u) or "windows phone" in u:
        return "mobile"
    if u.startswith("okhttp/"):
        return "mobile"
    if re.search(r"windows|macintosh|x11|cros", u):
        return "desktop"
    return "other"


def test_every_label_follows_the_rules() -> None:
    wrong = [
        (a.ua, a.device_type, rule_label(a.ua)) for a in AGENTS if a.device_type != rule_label(a.ua)
    ]
    assert wrong == []
    assert all(a.is_bot == (a.device_type == "bot") for a in AGENTS)


def test_pool_is_large_distinct_and_loggable() -> None:
    uas = [a.ua for a in AGENTS]
    assert len(uas) >= 60 and len(set(uas)) == len(uas)
    for ua in uas:
        assert ua and '"' not in ua and ua.isprintable() and ua == ua.strip()
    assert any("\\x22" in ua for ua in uas)  # an escaped quote, as nginx logs it
    assert all(a.weight > 0 and a.role in ROLES and a.device_type in DEVICE_TYPES for a in AGENTS)
    assert {a.device_type for a in AGENTS} == set(DEVICE_TYPES)


def test_pool_covers_the_families_real_sites_see() -> None:
    def has(device: str, *parts: str, absent: str = "") -> bool:
        return any(
            a.device_type == device
            and all(p in a.ua for p in parts)
            and not (absent and absent in a.ua)
            for a in AGENTS
        )

    assert has("desktop", "Chrome/", "Windows") and has("desktop", "Firefox/")
    assert has("desktop", "Safari/", "Macintosh") and has("desktop", "Edg/")
    assert has("desktop", "OPR/") and has("desktop", "X11; Linux") and has("desktop", "CrOS")
    assert has("mobile", "iPhone") and has("mobile", "Android", "Mobile")
    assert has("tablet", "iPad") and has("tablet", "Android", absent="Mobile")
    assert has("tablet", "Kindle") and has("tablet", "Silk/")
    assert has("bot", "Googlebot", "compatible") and has("bot", "Googlebot", "Android", "Mobile")
    assert has("bot", "bingbot") and has("bot", "curl/") and has("bot", "python-requests/")
    assert has("bot", "UptimeRobot") and has("bot", "Wget/")
    browsers = Counter(a.browser for a in AGENTS)
    for name in ("Chrome", "Firefox", "Safari", "Edge", "Opera", "Samsung Internet", "Googlebot"):
        assert browsers[name] >= 1
