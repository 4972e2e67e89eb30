"""Every logberg table, defined once: its columns, partitioning and write properties.

The DDL (`Table.create_sql`), the Spark schema (`Table.struct`) and the column lists the
jobs select all derive from these definitions; tests compare live tables against them.
All tables are Iceberg format v2 with zstd Parquet, in the namespace `DATABASE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from logberg.lakehouse import sql

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

DATABASE = "nginx_logs"

COMMON_PROPS: Mapping[str, str] = MappingProxyType(
    {
        "format-version": "2",
        "write.format.default": "parquet",
        "write.parquet.compression-codec": "zstd",
        "commit.retry.num-retries": "20",
        "commit.retry.min-wait-ms": "100",
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "100",
    }
)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark SQL type, e.g. STRING, ARRAY<DATE>
    nullable: bool = True
    comment: str = ""

    def ddl(self, comments: bool = True) -> str:
        out = f"{self.name} {self.type}" + ("" if self.nullable else " NOT NULL")
        if comments and self.comment:
            out += f" COMMENT {sql.literal(self.comment)}"
        return out


def cols(spec: str, **comments: str) -> tuple[Column, ...]:
    """Columns from `name TYPE[!], ...` (`!`: NOT NULL); comments by column name."""
    out = []
    depth, start = 0, 0
    parts = []
    for i, ch in enumerate(spec):  # split on commas outside <...>
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    parts.append(spec[start:])
    for part in (p.strip() for p in parts):
        name, type_ = part.split(None, 1)
        required = type_.endswith("!")
        out.append(Column(name, type_.rstrip("!"), not required, comments.pop(name, "")))
    if comments:
        raise ValueError(f"comments for unknown columns: {sorted(comments)}")
    return tuple(out)


@dataclass(frozen=True)
class Table:
    name: str  # unqualified
    columns: tuple[Column, ...]
    partitioned_by: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{DATABASE}.{self.name}"

    def __str__(self) -> str:
        return self.qualified

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl_schema(self) -> str:
        """`a STRING, b INT, ...`: the schema for createDataFrame (no comments)."""
        return ", ".join(c.ddl(comments=False) for c in self.columns)

    def struct(self) -> StructType:
        from pyspark.sql.types import StructType

        struct = StructType.fromDDL(self.ddl_schema())
        assert isinstance(struct, StructType)  # a column list parses to a struct
        return struct

    def all_properties(self) -> dict[str, str]:
        return {**COMMON_PROPS, **self.properties}

    def create_sql(self, catalog: str | None = None) -> str:
        """CREATE TABLE IF NOT EXISTS (a concurrent job may create it first); in `catalog`
        when given, else the session's current one."""
        name = f"{catalog}.{self.qualified}" if catalog else self.qualified
        parts = [
            f"CREATE TABLE IF NOT EXISTS {name} (",
            ", ".join(c.ddl() for c in self.columns),
            ") USING iceberg",
        ]
        if self.partitioned_by:
            parts.append(f" PARTITIONED BY ({self.partitioned_by})")
        parts.append(f" TBLPROPERTIES ({properties_sql(self.all_properties())})")
        return "".join(parts)

    def renamed(self, name: str) -> Table:
        return replace(self, name=name)


def properties_sql(props: Mapping[str, str]) -> str:
    return ", ".join(f"{sql.literal(k)}={sql.literal(v)}" for k, v in props.items())


# ---- ingest -----------------------------------------------------------------------------

# Ingest replaces a file's rows with an overwrite by source_file: full (not truncated)
# bounds let Iceberg match whole data files to it.
FILE_METRICS = {"write.metadata.metrics.column.source_file": "full"}
# Unique per row, or nearly (paths, referers): a dictionary only costs time (bench/README.md);
# user_agent, ip_address and the low-cardinality columns keep theirs. source_file is the
# opposite, one value per data file: hashing its long URI for every row costs more than
# writing it plain, which zstd then takes down to almost nothing.
NO_DICTIONARY = (
    "source_file",
    "event_id",
    "line_number",
    "timestamp",
    "request",
    "url",
    "url_path",
    "query_string",
    "referer",
    "forwarded_for",
    "request_id",
)
UNSHUFFLED = {"write.distribution-mode": "none"}
NO_DICTIONARY_PROP = "write.parquet.dict-encoding-enabled.column."


def no_dictionary(columns: Iterable[str]) -> dict[str, str]:
    """The write properties that turn the Parquet dictionary off for those of `columns` in
    NO_DICTIONARY. Only for columns the table has: Iceberg's writer warns once per data
    file about a property that names a missing column."""
    return {f"{NO_DICTIONARY_PROP}{c}": "false" for c in columns if c in NO_DICTIONARY}


# Partitioned by the UTC date (date filters prune files). Ingest writes without a shuffle or
# a sort: each task writes one input file, whose lines are already in time order, so hour
# and timestamp ranges per file stay tight; the fanout writer copes with a file that crosses
# midnight. `logberg maintain --strategy sort` sorts by ACCESS_SORT.
ACCESS_COLUMNS = cols(
    "event_id STRING!, ip_address STRING, remote_user STRING, timestamp TIMESTAMP, "
    "date DATE, hour INT, method STRING, url STRING, url_path STRING, "
    "query_string STRING, protocol STRING, request STRING, status_code INT, "
    "status_category STRING, response_size BIGINT, referer STRING, user_agent STRING, "
    "forwarded_for STRING, device_type STRING, browser STRING, os STRING, "
    "is_bot BOOLEAN, file_extension STRING, year INT, month INT, day INT, "
    "week_year INT, week_of_year INT, source_file STRING, line_number BIGINT, "
    "processed_timestamp TIMESTAMP",
    event_id="deterministic: hash(source_file)-line_number",
    ip_address="the client: $remote_addr, or from X-Forwarded-For (--client-ip)",
    timestamp="UTC, converted from the line's offset",
    date="UTC date",
    request="raw request field",
    week_year="ISO-8601 week-based year",
    week_of_year="ISO-8601 week",
)
ACCESS_LOGS = Table(
    "access_logs",
    ACCESS_COLUMNS,
    partitioned_by="date",
    properties={
        **UNSHUFFLED,
        "write.spark.fanout.enabled": "true",
        "write.target-file-size-bytes": str(256 * 1024 * 1024),
        **FILE_METRICS,
        **no_dictionary(c.name for c in ACCESS_COLUMNS),
    },
)
ACCESS_SORT = "date, hour, timestamp"
# Columns only some log formats fill (`--log-format`, `--client-ip`): access_logs gains each
# (Iceberg schema evolution, nullable, at the end) the first time a format that fills it is
# ingested, so a table of combined logs keeps the columns, and the write cost, it always had.
# A variable logberg does not know is added the same way, as a STRING column.
FORMAT_COLUMNS = cols(
    "request_time_ms INT, upstream_response_time_ms INT, upstream_attempts INT, "
    "request_length BIGINT, upstream_addr STRING, upstream_status STRING, host STRING, "
    "request_id STRING, remote_addr STRING",
    upstream_response_time_ms="sum over the upstream attempts",
    upstream_attempts="entries in $upstream_response_time (retries, redirects)",
    remote_addr="the peer ($remote_addr) when the client came from X-Forwarded-For",
)

REJECTS = Table(
    "access_logs_rejects",
    cols(
        "source_file STRING!, line_number BIGINT!, raw_line STRING, reason STRING, "
        "run_id STRING, rejected_at TIMESTAMP, log_format STRING, raw_bytes BINARY",
        log_format="the --log-format the line was read with: a preset name, or custom",
        raw_bytes="the line's exact bytes when they are not valid UTF-8 (raw_line then holds "
        "them decoded, with U+FFFD for each invalid sequence); NULL when raw_line is exact",
    ),
    properties={**UNSHUFFLED, **FILE_METRICS},
)

LEDGER = Table(
    "ingested_files",
    cols(
        "path STRING!, size BIGINT, modification_time TIMESTAMP, run_id STRING, "
        "lines BIGINT, accepted BIGINT, rejected BIGINT, ingested_at TIMESTAMP"
    ),
    properties=UNSHUFFLED,
)

INGEST_RUNS = Table(
    "ingest_runs",
    cols(
        "run_id STRING!, started_at TIMESTAMP, finished_at TIMESTAMP, files INT, "
        "lines_read BIGINT, accepted BIGINT, rejected BIGINT, bytes BIGINT, "
        "duration_s DOUBLE, snapshot_id BIGINT, dates ARRAY<DATE>, status STRING, "
        "replaced_concurrent INT, log_format STRING, client_ip STRING",
        replaced_concurrent="files another writer had committed; this run replaced them",
        log_format="--log-format: a preset's name, or the log_format as given",
        client_ip="--client-ip's rule, with its trusted proxies",
    ),
    properties=UNSHUFFLED,
)

STREAM_BATCHES = Table(
    "stream_batches",
    cols(
        "query_id STRING!, batch_id BIGINT!, run_id STRING, checkpoint STRING, files INT, "
        "lines_read BIGINT, accepted BIGINT, rejected BIGINT, committed_at TIMESTAMP"
    ),
    properties=UNSHUFFLED,
)

# Ingest from a Kafka topic (`ingest --from kafka://...`): the offsets each micro-batch
# committed, written after its rows; where the table ends in the topic, for a stream that
# lost its checkpoint, and how far behind a stream is.
KAFKA_OFFSETS = Table(
    "kafka_offsets",
    cols(
        "topic STRING!, partition INT!, from_offset BIGINT!, until_offset BIGINT!, "
        "query_id STRING!, batch_id BIGINT!, run_id STRING, checkpoint STRING, "
        "messages BIGINT, accepted BIGINT, rejected BIGINT, duplicates BIGINT, "
        "committed_at TIMESTAMP",
        from_offset="the batch's first offset in the partition",
        until_offset="one past the batch's last offset: where the next batch starts",
        duplicates="messages whose source identity the table held already (not stored again)",
    ),
    properties=UNSHUFFLED,
)

# The tables ingest creates (and brings to today's properties) before it writes.
INGEST_TABLES = (ACCESS_LOGS, REJECTS, LEDGER, INGEST_RUNS)

# ---- analytics --------------------------------------------------------------------------

WEEK = "week_year INT, week_of_year INT, week_start_date DATE, week_end_date DATE"
WEEK_KEYS = ["week_year", "week_of_year", "week_start_date", "week_end_date"]
IP_STATS = (
    "rank INT, ip_address STRING, request_count BIGINT, bytes_sent BIGINT, "
    "unique_paths BIGINT, error_rate DOUBLE, is_bot BOOLEAN, processed_timestamp TIMESTAMP"
)
DEVICE_STATS = (
    "rank INT, device_type STRING, request_count BIGINT, unique_ips BIGINT, share DOUBLE, "
    "processed_timestamp TIMESTAMP"
)
GOLD_PROPS = {"write.distribution-mode": "hash"}

DAILY_TOP_IPS = Table("daily_top_ips", cols(f"date DATE, {IP_STATS}"), "date", GOLD_PROPS)
WEEKLY_TOP_IPS = Table("weekly_top_ips", cols(f"{WEEK}, {IP_STATS}"), "week_start_date", GOLD_PROPS)
DAILY_TOP_DEVICES = Table(
    "daily_top_devices", cols(f"date DATE, {DEVICE_STATS}"), "date", GOLD_PROPS
)
WEEKLY_TOP_DEVICES = Table(
    "weekly_top_devices", cols(f"{WEEK}, {DEVICE_STATS}"), "week_start_date", GOLD_PROPS
)
WEEKLY_ANALYTICS = Table(
    "weekly_analytics",
    cols(
        "year INT, week_of_year INT, week_year INT, week_start_date DATE, "
        "week_end_date DATE, total_requests BIGINT, unique_ips BIGINT, total_bytes BIGINT, "
        "informational_count BIGINT, success_count BIGINT, redirect_count BIGINT, "
        "client_error_count BIGINT, server_error_count BIGINT, error_rate DOUBLE, "
        "bot_share DOUBLE, busiest_day DATE, busiest_day_requests BIGINT, busiest_hour INT, "
        "busiest_hour_requests BIGINT, processed_timestamp TIMESTAMP",
        year="ISO week-year",
    ),
    "week_start_date",
    GOLD_PROPS,
)
# Latency where the log format carries $request_time (`--log-format`); exact percentiles
# (percentile_disc: a value that occurred), in milliseconds.
DAILY_LATENCY = Table(
    "daily_latency",
    cols(
        "date DATE, scope STRING, status_category STRING, url_path STRING, rank INT, "
        "requests BIGINT, p50_ms INT, p95_ms INT, p99_ms INT, max_ms INT, "
        "upstream_p95_ms INT, processed_timestamp TIMESTAMP",
        scope="status: per status class, and 'All'; path: the slowest paths by p95",
        rank="path rows: 1..N by p95 desc, then url_path asc",
        requests="requests with a request time",
        upstream_p95_ms="p95 of upstream_response_time_ms (the sum over attempts)",
    ),
    "date",
    GOLD_PROPS,
)
HUMAN_SUFFIX = "_humans"  # --exclude-bots: the top-IP tables without bot traffic
DAILY_TOP_IPS_HUMANS = DAILY_TOP_IPS.renamed(DAILY_TOP_IPS.name + HUMAN_SUFFIX)
WEEKLY_TOP_IPS_HUMANS = WEEKLY_TOP_IPS.renamed(WEEKLY_TOP_IPS.name + HUMAN_SUFFIX)

ANALYTICS_RUNS = Table(
    "analytics_runs",
    cols(
        "run_id STRING, started_at TIMESTAMP, finished_at TIMESTAMP, "
        "ingest_run_ids ARRAY<STRING>, dates ARRAY<DATE>, weeks ARRAY<DATE>, duration_s DOUBLE, "
        "source_snapshot_id BIGINT",
        source_snapshot_id="the access_logs snapshot every table of this run was computed from",
    ),
)

# ---- maintenance ------------------------------------------------------------------------

MAINTENANCE_RUNS = Table(
    "maintenance_runs",
    cols(
        "run_id STRING!, table_name STRING, started_at TIMESTAMP, finished_at TIMESTAMP, "
        "strategy STRING, data_files_before BIGINT, data_files_after BIGINT, "
        "avg_file_bytes_before DOUBLE, avg_file_bytes_after DOUBLE, records_before BIGINT, "
        "records_after BIGINT, snapshots_before BIGINT, snapshots_after BIGINT, "
        "rewritten_files BIGINT, added_files BIGINT, rewritten_bytes BIGINT, "
        "failed_files BIGINT, manifests_rewritten BIGINT, expired_data_files BIGINT, "
        "orphans_removed BIGINT, retries INT, status STRING, error STRING"
    ),
    properties=UNSHUFFLED,
)

ALL_TABLES = (
    *INGEST_TABLES,
    STREAM_BATCHES,
    KAFKA_OFFSETS,
    DAILY_TOP_IPS,
    WEEKLY_TOP_IPS,
    DAILY_TOP_DEVICES,
    WEEKLY_TOP_DEVICES,
    WEEKLY_ANALYTICS,
    DAILY_TOP_IPS_HUMANS,
    WEEKLY_TOP_IPS_HUMANS,
    DAILY_LATENCY,
    ANALYTICS_RUNS,
    MAINTENANCE_RUNS,
)
