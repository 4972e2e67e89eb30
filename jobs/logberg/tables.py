"""DDL for logberg's Iceberg tables in nginx_logs (format v2, zstd Parquet)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from logberg.session import CATALOG, DATABASE

ACCESS_LOGS = f"{DATABASE}.access_logs"
REJECTS = f"{DATABASE}.access_logs_rejects"
LEDGER = f"{DATABASE}.ingested_files"
INGEST_RUNS = f"{DATABASE}.ingest_runs"

COMMON_PROPS = {
    "format-version": "2",
    "write.format.default": "parquet",
    "write.parquet.compression-codec": "zstd",
    "commit.retry.num-retries": "20",
    "commit.retry.min-wait-ms": "100",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
}

ACCESS_LOGS_COLUMNS = """
    event_id STRING NOT NULL COMMENT 'deterministic: hash(source_file)-line_number',
    ip_address STRING, remote_user STRING,
    timestamp TIMESTAMP COMMENT 'UTC, converted from the line''s offset',
    date DATE COMMENT 'UTC date', hour INT,
    method STRING, url STRING, url_path STRING, query_string STRING, protocol STRING,
    request STRING COMMENT 'raw request field',
    status_code INT, status_category STRING, response_size BIGINT,
    referer STRING, user_agent STRING, forwarded_for STRING,
    device_type STRING, browser STRING, os STRING, is_bot BOOLEAN,
    file_extension STRING,
    year INT, month INT, day INT,
    week_year INT COMMENT 'ISO-8601 week-based year', week_of_year INT COMMENT 'ISO-8601 week',
    source_file STRING, line_number BIGINT, processed_timestamp TIMESTAMP
"""


ACCESS_SORT = "date, hour, timestamp"
# Ingest replaces a file's rows with an overwrite by source_file: full (not truncated)
# bounds let Iceberg match whole data files to it.
FILE_METRICS = {"write.metadata.metrics.column.source_file": "full"}
# Unique per row, or nearly (paths, referers): a dictionary only costs time. Measured in
# bench/README.md; user_agent, ip_address and the low-cardinality columns keep theirs.
NO_DICTIONARY = (
    "event_id",
    "line_number",
    "timestamp",
    "request",
    "url",
    "url_path",
    "query_string",
    "referer",
    "forwarded_for",
)
ACCESS_PROPS = {
    "write.distribution-mode": "none",
    "write.spark.fanout.enabled": "true",
    "write.target-file-size-bytes": str(256 * 1024 * 1024),
    **FILE_METRICS,
    **{f"write.parquet.dict-encoding-enabled.column.{c}": "false" for c in NO_DICTIONARY},
}
REJECTS_PROPS = {"write.distribution-mode": "none", **FILE_METRICS}


def qualified(spark: SparkSession, table: str) -> str:
    """`nginx_logs.t` in the session's current catalog, for the DataFrameWriterV2 API."""
    return f"{spark.catalog.currentCatalog()}.{table}"


def _props(extra: dict[str, str] | None = None) -> str:
    props = {**COMMON_PROPS, **(extra or {})}
    return ", ".join(f"'{k}'='{v}'" for k, v in props.items())


def upgrade(spark: SparkSession, table: str, props: dict[str, str]) -> None:
    """Bring a table made by an older logberg to today's write properties (once)."""
    have = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    missing = {k: v for k, v in props.items() if have.get(k) != v}
    if missing:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({_props(missing)})")
    if have.get("sort-order", "[]") not in ("", "[]"):
        spark.sql(f"ALTER TABLE {qualified(spark, table)} WRITE UNORDERED")


def create_ingest_tables(spark: SparkSession) -> set[str]:
    """Create the ingest tables that are missing and update the others; returns those created.

    One SHOW TABLES instead of a load per table: this runs at the start of every job.
    """
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{DATABASE}")
    have = {r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{DATABASE}").collect()}
    # Partitioned by the UTC date (date filters prune files). Ingest writes without a shuffle
    # or a sort: each task writes one input file, whose lines are already in time order, so
    # hour/timestamp ranges per file stay tight; the fanout writer copes with a file that
    # crosses midnight. `logberg maintain --strategy sort` sorts by ACCESS_SORT.
    specs = [
        (ACCESS_LOGS, f"({ACCESS_LOGS_COLUMNS}) USING iceberg PARTITIONED BY (date)", ACCESS_PROPS),
        (
            REJECTS,
            """(source_file STRING NOT NULL, line_number BIGINT NOT NULL, raw_line STRING,
            reason STRING, run_id STRING, rejected_at TIMESTAMP) USING iceberg""",
            REJECTS_PROPS,
        ),
        (
            LEDGER,
            """(path STRING NOT NULL, size BIGINT, modification_time TIMESTAMP, run_id STRING,
            lines BIGINT, accepted BIGINT, rejected BIGINT, ingested_at TIMESTAMP)
            USING iceberg""",
            {"write.distribution-mode": "none"},
        ),
        (
            INGEST_RUNS,
            """(run_id STRING NOT NULL, started_at TIMESTAMP, finished_at TIMESTAMP,
            files INT, lines_read BIGINT, accepted BIGINT, rejected BIGINT, bytes BIGINT,
            duration_s DOUBLE, snapshot_id BIGINT, dates ARRAY<DATE>, status STRING)
            USING iceberg""",
            {"write.distribution-mode": "none"},
        ),
    ]
    created = set()
    for table, ddl, props in specs:
        if table.split(".")[1] in have:
            if table in (ACCESS_LOGS, REJECTS):
                upgrade(spark, table, props)
            continue
        # IF NOT EXISTS: a concurrent job may create it first.
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table} {ddl} TBLPROPERTIES ({_props(props)})")
        created.add(table)
    return created


INGEST_RUNS_SCHEMA = (
    "run_id STRING, started_at TIMESTAMP, finished_at TIMESTAMP, files INT, lines_read BIGINT, "
    "accepted BIGINT, rejected BIGINT, bytes BIGINT, duration_s DOUBLE, snapshot_id BIGINT, "
    "dates ARRAY<DATE>, status STRING"
)
