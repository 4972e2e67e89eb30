"""Pure DataFrame -> DataFrame transforms that turn raw nginx lines into access-log rows.

The line itself is parsed on the JVM by logberg's own scanner (`dev.logberg.LineScan`,
jobs/logberg/java, compiled by `make setup`): one left-to-right scan per line that yields
the typed fields, the request's parts and the reject reason. It replaced a regex, a `split`
and a date formatter (bench/README.md). It is called two ways: as a Java UDF on a column of
lines (`parse_lines`, here), and as a data source that parses the bytes of log files while
it reads them (`LINES_SOURCE`; `logberg.pipeline.ingest.reader`). No Python UDF anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.lakehouse.schema import ACCESS_LOGS, FORMAT_COLUMNS
from logberg.lakehouse.schema import Column as TableColumn
from logberg.pipeline import jar
from logberg.pipeline.devices import classify_device
from logberg.pipeline.weeks import iso_week

PARSE_UDF = "logberg_parse_line"
# What `enrich` and `event_id` add to a parsed line; ingest's reader can compute them itself
# (`read_parsed(..., derived=True)`, dev.logberg.Derived: the same values).
DERIVED_COLUMNS = (
    "event_id", "date", "hour", "year", "month", "day", "week_year", "week_of_year",
    "status_category", "device_type", "browser", "os", "is_bot",
)  # fmt: skip
PARSE_CLASS = "dev.logberg.ParseLine"
LINES_SOURCE = "dev.logberg.LogLines"  # the same parser as a data source (ingest's reader)


class RejectReason(str, Enum):
    """Why a line was rejected, in the order the parser checks (dev.logberg.Reject)."""

    UNPARSEABLE = "unparseable"
    BAD_IP = "bad_ip"
    BAD_TIMESTAMP = "bad_timestamp"
    BAD_STATUS = "bad_status"
    BAD_SIZE = "bad_size"
    BAD_REQUEST_TIME = "bad_request_time"
    BAD_UPSTREAM_TIME = "bad_upstream_time"
    BAD_REQUEST_LENGTH = "bad_request_length"


def parser_return_type(spark: SparkSession) -> str:
    """ParseLine's result type (DDL); a clear error when logberg's jar is not on the class
    path (the UDF and the source `LINES_SOURCE` are in the same jar)."""
    return jar.static_value(spark, PARSE_CLASS, "returnType")


def register(spark: SparkSession) -> None:
    """Make the JVM line parser callable as `PARSE_UDF` in this session (once)."""
    jar.register_function(spark, PARSE_UDF, PARSE_CLASS)


def parse_lines(lines: DataFrame, value: str = "value") -> DataFrame:
    """Raw lines -> typed fields, request parts and `reject_reason` (NULL for a good line).

    Input: a column `value` with one log line per row (other columns are kept). Output
    columns: ip_address, remote_user, timestamp (UTC), request, status_code, response_size,
    referer, user_agent, forwarded_for, method, url, url_path, query_string, protocol,
    file_extension, reject_reason (see LineScan.java for the grammar and each field).

    The fields come out of a generator (`inline` of a one-element array), which is an
    optimisation barrier: Catalyst cannot push a later filter on `reject_reason` below it,
    where it would call the parser again for every reference.
    """
    register(lines.sparkSession)
    parsed = F.call_udf(PARSE_UDF, F.col(value))
    return lines.select(*[F.col(c) for c in lines.columns], F.inline(F.array(parsed)))


def status_category(code: Column) -> Column:
    return (
        F.when(code < 200, "Informational")
        .when(code < 300, "Success")
        .when(code < 400, "Redirect")
        .when(code < 500, "Client Error")
        .otherwise("Server Error")
    )


def add_time_columns(df: DataFrame) -> DataFrame:
    """UTC date/hour and ISO-8601 week columns (`logberg.pipeline.weeks`)."""
    d = F.to_date(F.col("timestamp"))
    week = iso_week(d)
    return df.select(
        "*",
        d.alias("date"),
        F.hour("timestamp").alias("hour"),
        F.year(d).alias("year"),
        F.month(d).alias("month"),
        F.dayofmonth(d).alias("day"),
        week["week_year"].alias("week_year"),
        week["week_of_year"].alias("week_of_year"),
    )


def enrich(parsed_ok: DataFrame) -> DataFrame:
    """Good parsed rows -> the access_logs columns (less file/run bookkeeping)."""
    df = add_time_columns(parsed_ok)
    df = df.withColumn("status_category", status_category(F.col("status_code")))
    return classify_device(df, "user_agent")


def event_id(source_file: Column, line_number: Column) -> Column:
    """Deterministic id: 64-bit hash of the file URI, then the line number."""
    return F.concat(
        F.lpad(F.hex(F.xxhash64(source_file)), 16, "0"), F.lit("-"), line_number.cast("string")
    )


def to_access_rows(
    parsed: DataFrame,
    processed_at: Column,
    extras: Sequence[str] = (),
) -> DataFrame:
    """Parsed lines (with source_file and line_number) -> the access_logs rows of the good
    ones, in the table's column order; then `extras`, the columns the table gained from log
    formats (`FORMAT_COLUMNS`, typed, and unknown variables, STRING), NULL where these
    lines' format has none. Lines read with `derived=True` carry `DERIVED_COLUMNS` already
    (the same values `enrich` and `event_id` give); others get them here."""
    ok = parsed.where(F.col("reject_reason").isNull())
    have = set(parsed.columns)  # a combined read has no format columns
    if have.issuperset(DERIVED_COLUMNS):  # the reader computed them (`read_parsed`)
        rows = ok.withColumn("processed_timestamp", processed_at)
    else:
        rows = enrich(ok).withColumn("processed_timestamp", processed_at)
        rows = rows.withColumn("event_id", event_id(F.col("source_file"), F.col("line_number")))
    types = {c.name: c.type for c in FORMAT_COLUMNS}
    tail = [
        F.col(c) if c in have else F.lit(None).cast(types.get(c, "string")).alias(c) for c in extras
    ]
    return rows.select(*ACCESS_LOGS.names, *tail)


def access_columns(extras: Sequence[str] = ()) -> list[TableColumn]:
    """access_logs' columns as `to_access_rows` gives them: the table's, then `extras`
    (`FORMAT_COLUMNS` typed, any other a STRING)."""
    types = {c.name: c for c in FORMAT_COLUMNS}
    return [*ACCESS_LOGS.columns, *(types.get(c, TableColumn(c, "STRING")) for c in extras)]


def to_rejects(
    parsed: DataFrame, run_id: str, rejected_at: Column, log_format: str = "combined"
) -> DataFrame:
    """Parsed lines -> the rejects table's rows of the rejected ones.

    `raw_bytes`: the line's bytes when they are not valid UTF-8, as the file reader gives
    them; for lines from Spark's text source (`parse_lines`), whose `value` carries the
    bytes as read, they are taken from it and `raw_line` is made valid."""
    value = F.col("value")
    if "raw_bytes" in parsed.columns:
        raw_line, raw_bytes = value, F.col("raw_bytes")
    else:
        valid = F.is_valid_utf8(value)
        raw_line = F.when(valid, value).otherwise(F.make_valid_utf8(value))
        raw_bytes = F.when(~valid, value.cast("binary"))
    return parsed.where(F.col("reject_reason").isNotNull()).select(
        "source_file",
        "line_number",
        raw_line.alias("raw_line"),
        F.col("reject_reason").alias("reason"),
        F.lit(run_id).alias("run_id"),
        rejected_at.alias("rejected_at"),
        F.lit(log_format).alias("log_format"),
        raw_bytes.alias("raw_bytes"),
    )
