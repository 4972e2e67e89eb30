"""Device classification: exact on the generator's labelled pool, and agreement with
ua-parser (the reference) on a corpus of real-world agents: >= 98% device, >= 95% browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from ua_parser import parse

from generator.agents import AGENTS
from logberg.pipeline.devices import classify_device

CORPUS = Path(__file__).parent / "data" / "user_agents.txt"

# ua-parser families -> our browser families (anything else is "Other" on both sides).
BROWSERS = {
    "Chrome": "Chrome",
    "Chrome Mobile": "Chrome",
    "Chrome Mobile iOS": "Chrome",
    "Chrome Mobile WebView": "Chrome",
    "HeadlessChrome": "Chrome",
    "Chromium": "Chrome",
    "Firefox": "Firefox",
    "Firefox Mobile": "Firefox",
    "Firefox iOS": "Firefox",
    "Safari": "Safari",
    "Mobile Safari": "Safari",
    "Mobile Safari UI/WKWebView": "Safari",
    "Edge": "Edge",
    "Edge Mobile": "Edge",
    "Opera": "Opera",
    "Opera Mobile": "Opera",
    "Samsung Internet": "Samsung Internet",
    "Yandex Browser": "Yandex Browser",
    "IE": "IE",
    "Googlebot": "Googlebot",
    "Googlebot-Image": "Googlebot",
    "bingbot": "bingbot",
    "curl": "curl",
    "Amazon Silk": "Amazon Silk",
    "MiuiBrowser": "MiuiBrowser",
    "Huawei Browser": "Huawei Browser",
    "UC Browser": "UC Browser",
    "Vivaldi": "Vivaldi",
    "Instagram": "Instagram",
    "Facebook": "Facebook",
    "IE Mobile": "IE Mobile",
    "Kindle": "Kindle",
    "Applebot": "Applebot",
    "Python Requests": "Python Requests",
    "Wget": "Wget",
}
# Non-browser clients ua-parser names but gives no device: automated, so bots.
TOOLS = {
    "curl",
    "Wget",
    "Python Requests",
    "Go-http-client",
    "okhttp",
    "Apache-HttpClient",
    "Java",
    "Scrapy",
    "HeadlessChrome",
    "Twitterbot",
    "Slackbot-LinkExpanding",
}
DESKTOP_OS = {"Windows", "Mac OS X", "Linux", "Ubuntu", "Chrome OS", "Fedora"}


def reference_device(ua: str) -> str:
    """ua-parser's verdict mapped onto our classes. ua-parser has no phone/tablet split for
    Android, so there we apply the usual rule on its output: no "Mobile" token = tablet."""
    r = parse(ua)
    device = r.device.family if r.device else "Other"
    brand = (r.device.brand if r.device else None) or ""
    os_family = r.os.family if r.os else "Other"
    family = r.user_agent.family if r.user_agent else "Other"
    if device == "Spider" or family in TOOLS:
        return "bot"
    if family != "Other" and r.device is None and r.os is None:
        return "bot"  # a named non-browser client (HTTP library, tool): automated
    if device == "iPad" or "Tablet" in brand or device.startswith("Kindle"):
        return "tablet"
    if os_family == "Android":
        return "mobile" if "Mobile" in ua else "tablet"
    if device in ("iPhone", "iPod") or os_family in ("iOS", "Windows Phone"):
        return "mobile"
    if os_family in DESKTOP_OS:
        return "desktop"
    return "other"


def reference_browser(ua: str) -> str:
    r = parse(ua)
    return BROWSERS.get(r.user_agent.family if r.user_agent else "Other", "Other")


def classify(spark, agents: list[str]) -> list[tuple[str, str, str, bool]]:
    df = spark.createDataFrame([(i, ua) for i, ua in enumerate(agents)], "i INT, user_agent STRING")
    rows = classify_device(df).orderBy("i").collect()
    return [(r.user_agent, r.device_type, r.browser, r.is_bot) for r in rows]


def test_generator_pool_is_classified_exactly(spark) -> None:
    agents = [a for a in AGENTS if a.ua != "-"]
    got = classify(spark, [a.ua for a in agents])
    wrong = [
        (a.ua, a.device_type, dev)
        for a, (_, dev, _, _) in zip(agents, got, strict=True)
        if dev != a.device_type
    ]
    assert wrong == []
    assert all(bot == (dev == "bot") for _, dev, _, bot in got)


@pytest.mark.parametrize(
    ("ua", "device", "browser"),
    [
        (
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, "
            "like Gecko) Chrome/126.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; "
            "+http://www.google.com/bot.html)",
            "bot",
            "Googlebot",
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "tablet",
            "Safari",
        ),
        (
            "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36",
            "tablet",
            "Chrome",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
            "desktop",
            "Edge",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/125.0.0.0 Safari/537.36 OPR/111.0.0.0",
            "desktop",
            "Opera",
        ),
    ],
)
def test_the_classic_mistakes(spark, ua: str, device: str, browser: str) -> None:
    [(_, dev, br, _)] = classify(spark, [ua])
    assert (dev, br) == (device, browser)


def test_agreement_with_ua_parser(spark) -> None:
    """Real-world agents only (the generator's pool is checked exactly above). Known
    disagreements are ua-parser misses: Applebot and Bytespider are crawlers it labels as
    browsers."""
    corpus = sorted({line for line in CORPUS.read_text().splitlines() if line.strip()})
    got = classify(spark, corpus)
    device_ok = [dev == reference_device(ua) for ua, dev, _, _ in got]
    browser_ok = [br == reference_browser(ua) for ua, _, br, _ in got]
    device_rate = sum(device_ok) / len(got)
    browser_rate = sum(browser_ok) / len(got)
    report = [
        (ua, dev, reference_device(ua), br, reference_browser(ua))
        for (ua, dev, br, _), d, b in zip(got, device_ok, browser_ok, strict=True)
        if not (d and b)
    ]
    print(
        f"\ndevice agreement {device_rate:.3f}, browser agreement {browser_rate:.3f} "
        f"on {len(got)} agents; disagreements:"
    )
    for row in report:
        print("  ", row)
    assert device_rate >= 0.98, report
    assert browser_rate >= 0.95, report
