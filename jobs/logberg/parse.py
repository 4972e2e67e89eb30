"""Pure DataFrame -> DataFrame transforms that turn raw nginx lines into access-log rows.

The line itself is parsed on the JVM by logberg's own scanner (`dev.logberg.LineScan`,
jobs/logberg/java, built by `logberg.jvm`): one left-to-right scan per line that yields the
typed fields, the request's parts and the reject reason. It replaced a regex, a `split` and
a date formatter (bench/README.md). It is called two ways: as a Java UDF on a column of
lines (`parse_lines`, here), and as a data source that parses the bytes of log files while
it reads them (`LINES_SOURCE`; `logberg.ingest.read_parsed`). No Python UDF anywhere.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.devices import classify_device
from logberg.errors import ConfigError

PARSE_UDF = "logberg_parse_line"
PARSE_CLASS = "dev.logberg.ParseLine"
LINES_SOURCE = "dev.logberg.LogLines"  # the same parser as a data source (ingest's reader)
REJECT_REASONS = ("unparseable", "bad_ip", "bad_timestamp", "bad_status", "bad_size")


def parser_return_type(spark: SparkSession) -> str:
    """ParseLine's result type (DDL); a clear error when logberg's jar is not on the class
    path (the UDF and the source `LINES_SOURCE` are in the same jar)."""
    return_type = spark.sparkContext._jvm.dev.logberg.ParseLine.RETURN_TYPE  # type: ignore[union-attr]
    if not isinstance(return_type, str):  # py4j hands back a package for a missing class
        raise ConfigError(
            f"{PARSE_CLASS} is not on the Spark class path: run `make setup` (local), or use "
            "the logberg Spark image (images/spark), which has it in /opt/spark/jars"
        )
    return return_type


def register(spark: SparkSession) -> None:
    """Make the JVM line parser callable as `PARSE_UDF` in this session."""
    spark.udf.registerJavaFunction(PARSE_UDF, PARSE_CLASS, parser_return_type(spark))


class RejectSink:
    """Rejected lines kept while a batch is read (dev.logberg.RejectCollector), bounded.

    `ingest.read_parsed(..., sink=...)` adds every line it rejects, with its source_file and
    line_number; `lines()` then gives them as a DataFrame with their count, or None when
    they passed `budget_chars` (the caller reads them from the files again).
    """

    VIEW = "logberg_batch_rejects"

    def __init__(self, spark: SparkSession, budget_chars: int) -> None:
        self._spark = spark
        self._jvm = spark.sparkContext._jvm.dev.logberg.RejectCollector(budget_chars)  # type: ignore[union-attr]
        self.id = str(self._jvm.register(spark._jsparkSession))

    def lines(self) -> tuple[DataFrame, int] | None:
        """(source_file, line_number, value, reject_reason of each line kept; their count),
        or None if over budget."""
        if self._jvm.overflowed():
            return None
        n = int(self._jvm.publish(self._spark._jsparkSession, self.VIEW))
        return self._spark.table(self.VIEW), n


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
    df = add_time_columns(parsed_ok)
    df = df.withColumn("status_category", status_category(F.col("status_code")))
    return classify_device(df, "user_agent", agents)
