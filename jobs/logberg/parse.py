"""Pure DataFrame -> DataFrame transforms that turn raw nginx lines into access-log rows.

One pass on the JVM: a single possessive regex rewrites each line into \\x01-separated fields
(`regexp_replace`), and one `split` cuts it. No Python UDF anywhere. A line that does not
match stays unchanged, so it splits into one part: that is how unparseable lines are found.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from logberg.devices import classify_device

SEP = "\u0001"
# remote_addr ident remote_user [time_local] "request" status bytes "referer" "agent" rest
# nginx escapes '"' and control bytes as \xHH, so quoted fields never hold a raw quote.
LINE_RE = (
    r'^(\S++) (\S++) (\S++) \[([^\]]*+)\] "([^"]*+)" (\S++) (\S++) "([^"]*+)" "([^"]*+)"(.*+)$'
)
FIELDS = ["ip", "ident", "user", "time", "request", "status", "size", "referer", "agent", "rest"]
REPLACEMENT = SEP.join(f"${i}" for i in range(1, len(FIELDS) + 1))
TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"
IP_CHARS = r"^[0-9A-Fa-f:.]{2,45}$"

REJECT_REASONS = ("unparseable", "bad_ip", "bad_timestamp", "bad_status", "bad_size")


def _dash_null(c: Column) -> Column:
    return F.when(c == "-", F.lit(None)).otherwise(c)


def split_fields(lines: DataFrame, value: str = "value") -> DataFrame:
    """Add `parts`: the line's fields, or a single element when the line does not match."""
    return lines.withColumn(
        "parts", F.split(F.regexp_replace(F.col(value), LINE_RE, REPLACEMENT), SEP)
    )


def parse_lines(lines: DataFrame, value: str = "value") -> DataFrame:
    """Raw lines -> typed fields plus `reject_reason` (NULL for a good line).

    Input: a column `value` with one log line per row (other columns are kept).

    The typed fields come out of a generator (`inline` of a one-element array), which is an
    optimisation barrier: Catalyst cannot push a later filter on `reject_reason` below it.
    Without it, `.where(reject_reason IS NULL)` is rewritten in terms of `value` and the regex
    is copied into every reference (15 copies, 6x slower, measured in bench/README.md).
    """
    df = split_fields(lines, value)
    p = F.col("parts")
    matched = F.size(p) == len(FIELDS)
    f = {name: F.when(matched, F.get(p, i)) for i, name in enumerate(FIELDS)}
    ts = F.try_to_timestamp(f["time"], F.lit(TIME_FORMAT))
    status = F.when(f["status"].rlike(r"^[1-5][0-9][0-9]$"), f["status"].cast("int"))
    size = F.when(f["size"] == "-", F.lit(0).cast("long")).otherwise(
        F.when(f["size"].rlike(r"^[0-9]{1,18}$"), f["size"].cast("long"))
    )
    forwarded = F.when(f["rest"].startswith(' "'), F.get(F.split(f["rest"], '"'), 1))
    typed = F.struct(
        matched.alias("_matched"),
        f["ip"].rlike(IP_CHARS).alias("_ip_ok"),
        f["ip"].alias("ip_address"),
        _dash_null(f["user"]).alias("remote_user"),
        ts.alias("timestamp"),
        f["request"].alias("request"),
        status.alias("status_code"),
        size.alias("response_size"),
        _dash_null(f["referer"]).alias("referer"),
        _dash_null(f["agent"]).alias("user_agent"),
        _dash_null(forwarded).alias("forwarded_for"),
    )
    out = df.select(*[F.col(c) for c in lines.columns], F.inline(F.array(typed)))
    reason = (
        F.when(~F.col("_matched"), F.lit("unparseable"))
        .when(~F.col("_ip_ok"), F.lit("bad_ip"))
        .when(F.col("timestamp").isNull(), F.lit("bad_timestamp"))
        .when(F.col("status_code").isNull(), F.lit("bad_status"))
        .when(F.col("response_size").isNull(), F.lit("bad_size"))
    )
    return out.select("*", reason.alias("reject_reason")).drop("_matched", "_ip_ok")


def split_request(df: DataFrame) -> DataFrame:
    """`request` -> method, url, url_path, query_string, protocol, file_extension.

    `METHOD target HTTP/x.y` is the normal case; HTTP/0.9 `GET /` keeps method and url with
    a NULL protocol; anything else (`-`, a TLS handshake `\\x16\\x03…`) keeps only `request`.
    """
    parts = F.split(F.col("request"), " ")
    n = F.size(parts)
    method_ok = F.get(parts, 0).rlike(r"^[A-Z]{1,20}$")
    full = (n == 3) & method_ok & F.get(parts, 2).startswith("HTTP/")
    http09 = (n == 2) & method_ok
    url = F.when(full | http09, F.get(parts, 1))
    path = F.substring_index(url, "?", 1)
    last = F.substring_index(path, "/", -1)
    return df.select(
        "*",
        F.when(full | http09, F.get(parts, 0)).alias("method"),
        url.alias("url"),
        path.alias("url_path"),
        F.when(url.contains("?"), F.expr("substr(url, instr(url, '?') + 1)")).alias("query_string"),
        F.when(full, F.get(parts, 2)).alias("protocol"),
        F.when(last.contains("."), F.lower(F.substring_index(last, ".", -1))).alias(
            "file_extension"
        ),
    )


def status_category(code: Column) -> Column:
    return (
        F.when(code < 200, "Informational")
        .when(code < 300, "Success")
        .when(code < 400, "Redirect")
        .when(code < 500, "Client Error")
        .otherwise("Server Error")
    )


def add_time_columns(df: DataFrame) -> DataFrame:
    """UTC date/hour and ISO-8601 week columns (week_year = the year of the week's Thursday)."""
    d = F.to_date(F.col("timestamp"))
    thursday = F.date_add(d, 3 - F.weekday(d))
    return df.select(
        "*",
        d.alias("date"),
        F.hour("timestamp").alias("hour"),
        F.year(d).alias("year"),
        F.month(d).alias("month"),
        F.dayofmonth(d).alias("day"),
        F.year(thursday).alias("week_year"),
        F.weekofyear(d).alias("week_of_year"),
    )


def enrich(parsed_ok: DataFrame, agents: DataFrame | None = None) -> DataFrame:
    """Good parsed rows -> the access_logs columns (less file/run bookkeeping).

    `agents`: an optional `devices.agent_lookup` table (same result, faster).
    """
    df = split_request(parsed_ok)
    df = add_time_columns(df)
    df = df.withColumn("status_category", status_category(F.col("status_code")))
    return classify_device(df, "user_agent", agents)
