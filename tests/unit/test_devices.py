"""Device classification: ua-parser's families (its JVM port, in the Spark job) with
logberg's rules on top (agents.rules).

* Exact on the generator's labelled pool and on hand-picked cases (native apps, feed
  readers, monitors, libraries, the classic mistakes).
* On real-world agents (tests/data/agents, sources named there), logberg on the JVM agrees
  with the Python ua-parser package (another implementation, with newer uap-core rules)
  plus the same rules, on >= 98% of requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from ua_parser import parse

from generator.agents import AGENTS
from logberg.pipeline import agent_rules
from logberg.pipeline.devices import classify_device

DATA = Path(__file__).resolve().parents[1] / "data" / "agents"


def reference(ua: str) -> tuple[str, str, str]:
    """(device_type, browser, os) by the Python ua-parser package and agents.rules."""
    r = parse(ua)
    browser = r.user_agent.family if r.user_agent else agent_rules.OTHER
    os = r.os.family if r.os else agent_rules.OTHER
    device = r.device.family if r.device else agent_rules.OTHER
    return agent_rules.device_type(ua, browser, os, device), browser, os


def classify(spark, agents: Sequence[str | None]) -> list[tuple[str, str, str, bool]]:
    df = spark.createDataFrame(list(enumerate(agents)), "i INT, user_agent STRING")
    rows = classify_device(df).orderBy("i").collect()
    return [(r.device_type, r.browser, r.os, r.is_bot) for r in rows]


def tsv(name: str) -> list[tuple[str, str]]:
    rows = [line.split("\t", 1) for line in (DATA / name).read_text().splitlines() if line]
    return [(a, b) for a, b in rows]


def test_generator_pool_is_classified_exactly(spark) -> None:
    agents = [a for a in AGENTS if a.ua != "-"]
    got = classify(spark, [a.ua for a in agents])
    wrong = [
        (a.ua, a.device_type, dev)
        for a, (dev, _, _, _) in zip(agents, got, strict=True)
        if dev != a.device_type
    ]
    assert wrong == []
    assert all(bot == (dev == "bot") for dev, _, _, bot in got)


@pytest.mark.parametrize(
    ("ua", "device", "browser", "os"),
    [
        # Googlebot's smartphone agent says Android and Mobile: the bot rules win.
        (
            "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, "
            "like Gecko) Chrome/126.0 Mobile Safari/537.36 (compatible; Googlebot/2.1; "
            "+http://www.google.com/bot.html)",
            "bot",
            "Googlebot",
            "Android",
        ),
        (
            "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "tablet",
            "Mobile Safari",
            "iOS",
        ),
        # An Android browser without "Mobile" is a tablet.
        (
            "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36",
            "tablet",
            "Chrome",
            "Android",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
            "desktop",
            "Edge",
            "Windows",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/125.0.0.0 Safari/537.36 OPR/111.0.0.0",
            "desktop",
            "Opera",
            "Windows",
        ),
        # Native apps are the device they run on: Apple's CFNetwork, Android's Dalvik/okhttp.
        ("MyShop/4.2.1 CFNetwork/1490.0.4 Darwin/23.2.0", "mobile", "MyShop", "iOS"),
        (
            "Dalvik/2.1.0 (Linux; U; Android 14; SM-S918B Build/UP1A.231005.007)",
            "mobile",
            "Android",
            "Android",
        ),
        ("okhttp/4.12.0", "mobile", "okhttp", "Other"),
        # Feed readers, monitors and HTTP libraries are bots, though no search crawler.
        (
            "Feedly/1.0 (+http://www.feedly.com/fetcher.html; like FeedFetcher-Google)",
            "bot",
            "Other",
            "Other",
        ),
        ("Tiny Tiny RSS/23.04 (https://tt-rss.org/)", "bot", "Tiny Tiny RSS", "Other"),
        ("Uptime-Kuma/1.23.16", "bot", "Other", "Other"),
        ("python-requests/2.32.3", "bot", "Python Requests", "Other"),
        ("Go-http-client/2.0", "bot", "Go-http-client", "Other"),
        ("Mozilla", "other", "Other", "Other"),
    ],
)
def test_the_classic_mistakes(spark, ua: str, device: str, browser: str, os: str) -> None:
    [(dev, br, o, bot)] = classify(spark, [ua])
    assert (dev, br, o, bot) == (device, browser, os, device == "bot")


def test_a_missing_agent_is_other(spark) -> None:
    assert classify(spark, [None]) == [("other", "Other", "Other", False)]


def agreement(got: list[tuple[str, str, str, bool]], agents: list[str], weights: list[float]):
    ref = [reference(a) for a in agents]
    total = sum(weights)
    agree = sum(w for w, (d, *_), (rd, *_) in zip(weights, got, ref, strict=True) if d == rd)
    wrong = [(a, g[0], r[0]) for a, g, r in zip(agents, got, ref, strict=True) if g[0] != r[0]]
    return agree / total, wrong


def test_real_browser_traffic_agrees_with_ua_parser(spark) -> None:
    rows = tsv("browsers.tsv")
    agents, weights = [a for _, a in rows], [float(w) for w, _ in rows]
    got = classify(spark, agents)
    rate, wrong = agreement(got, agents, weights)
    print(f"\nbrowsers: device agreement {rate:.4f} of requests; disagreements: {wrong[:20]}")
    assert rate >= 0.98, wrong
    # Each class real traffic has is seen (a classifier stuck on one answer cannot pass).
    assert {d for d, *_ in got} >= {"desktop", "mobile", "tablet"}


def test_real_automated_clients_agree_with_ua_parser(spark) -> None:
    """Crawlers, feed readers, monitors, libraries: each observed agent counts once."""
    rows = tsv("automated.tsv")
    agents = [a for _, a in rows]
    got = classify(spark, agents)
    rate, wrong = agreement(got, agents, [1.0] * len(agents))
    print(f"\nautomated: device agreement {rate:.4f}; disagreements: {wrong[:20]}")
    assert rate >= 0.98, wrong
    # And they are mostly bots: by ua-parser's Spider family, logberg's markers, or a contact
    # address in an agent ua-parser does not know. Those that are not: okhttp (an app) and
    # agents that pose as browsers.
    bots = sum(d == "bot" for d, *_ in got) / len(got)
    print(f"automated: {bots:.3f} classified bot")
    assert bots >= 0.85
    # Per kind of client: the share classified bot, for those the issue names.
    share: dict[str, list[bool]] = {}
    for (tags, _), (dev, *_) in zip(rows, got, strict=True):
        for tag in tags.split(","):
            share.setdefault(tag, []).append(dev == "bot")
    rates = {tag: sum(v) / len(v) for tag, v in share.items()}
    print("automated, bot share by tag:", {t: round(r, 3) for t, r in sorted(rates.items())})
    assert rates["feed-reader"] >= 0.85 and rates["monitoring"] >= 0.8
    assert rates["search-engine"] >= 0.85 and rates["ai-crawler"] >= 0.8
