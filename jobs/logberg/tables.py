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


def qualified(spark: SparkSession, table: str) -> str:
    """`nginx_logs.t` in the session's current catalog, for the DataFrameWriterV2 API."""
    return f"{spark.catalog.currentCatalog()}.{table}"


def _props(extra: dict[str, str] | None = None) -> str:
    props = {**COMMON_PROPS, **(extra or {})}
    return ", ".join(f"'{k}'='{v}'" for k, v in props.items())


def create_ingest_tables(spark: SparkSession) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{DATABASE}")
    # Partitioned by the UTC date (date filters prune files); rows are sorted by hour within
    # each file so hour filters skip row groups. No shuffle before the write: input files
    # are already time-windowed, and tasks sort locally.
    access_props = _props(
        {
            "write.distribution-mode": "none",
            "write.merge.distribution-mode": "none",
            # Ingest MERGEs only insert: concurrent ingests of different files must not
            # fail each other's validation.
            "write.merge.isolation-level": "snapshot",
            "write.target-file-size-bytes": str(256 * 1024 * 1024),
        }
    )
    fresh = not spark.catalog.tableExists(qualified(spark, ACCESS_LOGS))
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {ACCESS_LOGS} ({ACCESS_LOGS_COLUMNS})
        USING iceberg PARTITIONED BY (date) TBLPROPERTIES ({access_props})"""
    )
    if fresh:  # a metadata commit: only once, not on every run
        spark.sql(
            f"ALTER TABLE {qualified(spark, ACCESS_LOGS)} "
            "WRITE LOCALLY ORDERED BY date, hour, timestamp"
        )
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {REJECTS} (
            source_file STRING NOT NULL, line_number BIGINT NOT NULL, raw_line STRING,
            reason STRING, run_id STRING, rejected_at TIMESTAMP)
        USING iceberg
        TBLPROPERTIES ({
            _props({"write.merge.isolation-level": "snapshot", "write.distribution-mode": "none"})
        })"""
    )
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {LEDGER} (
            path STRING NOT NULL, size BIGINT, modification_time TIMESTAMP, run_id STRING,
            lines BIGINT, accepted BIGINT, rejected BIGINT, ingested_at TIMESTAMP)
        USING iceberg TBLPROPERTIES ({_props({"write.distribution-mode": "none"})})"""
    )
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {INGEST_RUNS} (
            run_id STRING NOT NULL, started_at TIMESTAMP, finished_at TIMESTAMP,
            files INT, lines_read BIGINT, accepted BIGINT, rejected BIGINT, bytes BIGINT,
            duration_s DOUBLE, snapshot_id BIGINT, dates ARRAY<DATE>, status STRING)
        USING iceberg TBLPROPERTIES ({_props({"write.distribution-mode": "none"})})"""
    )


INGEST_RUNS_SCHEMA = (
    "run_id STRING, started_at TIMESTAMP, finished_at TIMESTAMP, files INT, lines_read BIGINT, "
    "accepted BIGINT, rejected BIGINT, bytes BIGINT, duration_s DOUBLE, snapshot_id BIGINT, "
    "dates ARRAY<DATE>, status STRING"
)
