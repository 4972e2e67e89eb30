"""Device, browser and OS classification as Spark SQL expressions (JVM-side, no UDF).

The agent is lower-cased once; then plain substring tests, in priority order:
bots win over everything (Googlebot's smartphone agent says "Android … Mobile"),
then tablets (iPad, Kindle/Silk, Android without "Mobile"), then phones, then desktops.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.lakehouse import sql

BOT_MARKERS = (
    "bot",
    "crawl",
    "spider",
    "slurp",
    "curl/",
    "wget/",
    "python-requests",
    "python-urllib",
    "aiohttp",
    "httpx",
    "go-http-client",
    "okhttp",
    "java/",
    "apache-httpclient",
    "libwww",
    "scrapy",
    "uptimerobot",
    "pingdom",
    "statuscake",
    "monitor",
    "nagios",
    "zabbix",
    "check_http",
    "headlesschrome",
    "facebookexternalhit",
    "feedfetcher",
    "mediapartners",
    "lighthouse",
    "ahrefs",
    "semrush",
    "baiduspider",
    "bytespider",
    "petalbot",
    "mj12bot",
    "dotbot",
    "gptbot",
    "ccbot",
    "claude",
    "node-fetch",
    "axios/",
    "postman",
    "httpie",
    "masscan",
    "zgrab",
    "nmap",
    "nikto",
    "sqlmap",
    "wpscan",
    "censys",
    "expanse",
    "preview",
    "fetcher",
    "whatsapp",
)
TABLET_MARKERS = ("ipad", "kindle", "silk/", "tablet", "playbook", "nexus 7", "nexus 9", "sm-t")
PHONE_MARKERS = ("iphone", "ipod", "windows phone", "blackberry", "opera mini", "mobile")
DESKTOP_MARKERS = ("windows nt", "macintosh", "x11", "cros", "linux x86_64", "ubuntu")


def _any(ua: Column, markers: tuple[str, ...]) -> Column:
    cond = ua.contains(markers[0])
    for m in markers[1:]:
        cond = cond | ua.contains(m)
    return cond


def device_type(ua: Column) -> Column:
    """`ua` must already be lower-cased."""
    android = ua.contains("android")
    return (
        F.when(ua.isNull(), F.lit("other"))
        .when(_any(ua, BOT_MARKERS), F.lit("bot"))
        .when(_any(ua, TABLET_MARKERS) | (android & ~ua.contains("mobile")), F.lit("tablet"))
        .when(_any(ua, PHONE_MARKERS) | android, F.lit("mobile"))
        .when(_any(ua, DESKTOP_MARKERS), F.lit("desktop"))
        .otherwise(F.lit("other"))
    )


def browser(ua: Column) -> Column:
    """Browser family; order matters (Edge and Opera agents also say Chrome and Safari)."""
    return (
        F.when(ua.isNull(), F.lit("Other"))
        .when(ua.contains("googlebot"), F.lit("Googlebot"))
        .when(ua.contains("applebot"), F.lit("Applebot"))
        .when(ua.contains("bingbot"), F.lit("bingbot"))
        .when(ua.contains("curl/"), F.lit("curl"))
        .when(ua.contains("python-requests"), F.lit("Python Requests"))
        .when(ua.contains("wget/"), F.lit("Wget"))
        .when(_any(ua, ("edg/", "edge/", "edga/", "edgios/")), F.lit("Edge"))
        .when(_any(ua, ("opr/", "opera", "opios/")), F.lit("Opera"))
        .when(ua.contains("samsungbrowser/"), F.lit("Samsung Internet"))
        .when(ua.contains("silk/"), F.lit("Amazon Silk"))
        .when(ua.contains("miuibrowser/"), F.lit("MiuiBrowser"))
        .when(ua.contains("huaweibrowser/"), F.lit("Huawei Browser"))
        .when(ua.contains("ucbrowser/"), F.lit("UC Browser"))
        .when(ua.contains("vivaldi/"), F.lit("Vivaldi"))
        .when(ua.contains("instagram"), F.lit("Instagram"))
        .when(ua.contains("fban/") | ua.contains("fbav/"), F.lit("Facebook"))
        .when(ua.contains("iemobile/"), F.lit("IE Mobile"))
        .when(ua.contains("yabrowser/"), F.lit("Yandex Browser"))
        .when(_any(ua, ("firefox/", "fxios/")), F.lit("Firefox"))
        .when(_any(ua, ("chrome/", "crios/", "chromium/")), F.lit("Chrome"))
        .when(ua.contains("safari/") & ua.contains("version/"), F.lit("Safari"))
        .when(_any(ua, ("iphone", "ipad")) & ua.contains("applewebkit"), F.lit("Safari"))
        .when(ua.contains("kindle/"), F.lit("Kindle"))
        .when(_any(ua, ("msie ", "trident/")), F.lit("IE"))
        .otherwise(F.lit("Other"))
    )


def operating_system(ua: Column) -> Column:
    return (
        F.when(ua.isNull(), F.lit("Other"))
        .when(ua.contains("windows phone"), F.lit("Windows Phone"))
        .when(ua.contains("windows"), F.lit("Windows"))
        .when(_any(ua, ("iphone", "ipad", "ipod")), F.lit("iOS"))
        .when(ua.contains("android"), F.lit("Android"))
        .when(ua.contains("cros"), F.lit("Chrome OS"))
        .when(_any(ua, ("mac os x", "macintosh")), F.lit("Mac OS X"))
        .when(_any(ua, ("linux", "x11")), F.lit("Linux"))
        .otherwise(F.lit("Other"))
    )


def _classes(ua: Column) -> Column:
    """device_type, browser and os of a lower-cased agent, as one struct."""
    return F.struct(
        device_type(ua).alias("device_type"),
        browser(ua).alias("browser"),
        operating_system(ua).alias("os"),
    )


def agent_lookup(spark: SparkSession, agents: Iterable[str]) -> DataFrame:
    """The `classify_device` lookup for agents the driver already holds (e.g. a sample).

    Agents repeat (a day of traffic has a few thousand distinct ones), and classifying one
    costs ~100 substring tests, so classifying each distinct agent once and joining is much
    cheaper than classifying every row. Built on an inline VALUES table, so Spark
    classifies the agents while planning (ConvertToLocalRelation): no job, no generated code.
    """
    distinct = sorted(set(agents))
    if not distinct:
        distinct = [""]  # VALUES needs a row; no real agent is empty ('-' is NULL)
    values = ", ".join(f"({sql.literal(a)})" for a in distinct)
    table = spark.sql(f"SELECT * FROM VALUES {values} AS t(_agent)")
    return table.select("_agent", _classes(F.lower(F.col("_agent"))).alias("_classes"))


def classify_device(
    df: DataFrame, agent: str = "user_agent", lookup: DataFrame | None = None
) -> DataFrame:
    """Add device_type, browser, os and is_bot from the user-agent column.

    With `lookup` (from `agent_lookup`) agents are looked up through a broadcast join;
    an agent missing from it is classified in place, so the result is the same either way.
    """
    inline = _classes(F.lower(F.col(agent)))
    if lookup is None:
        cls = df.select("*", inline.alias("_classes"))
    else:
        joined = df.join(F.broadcast(lookup), F.col(agent) == F.col("_agent"), "left")
        cls = joined.select(
            *[F.col(c) for c in df.columns], F.coalesce("_classes", inline).alias("_classes")
        )
    c = F.col("_classes")
    return cls.select(
        *[F.col(n) for n in df.columns],
        c["device_type"].alias("device_type"),
        c["browser"].alias("browser"),
        c["os"].alias("os"),
        (c["device_type"] == "bot").alias("is_bot"),
    )
