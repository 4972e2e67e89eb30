"""`logberg ingest`: raw nginx logs -> nginx_logs.access_logs, with rejects, a file ledger,
exact re-runs and incremental pick-up. Runs unchanged locally and as a SparkApplication.

Exactness:
* every row's `event_id` is derived from (source_file, line_number), so the same line always
  has the same id; rows are written with an insert-only MERGE on event_id (and date, for
  partition pruning), so a re-run, or a re-run after a crash, adds nothing twice;
* a run's rows go in one commit per batch of files (atomic per file);
* the ledger (nginx_logs.ingested_files) is appended after the data commit: a crash between
  the two only makes the next run re-read those files, and the MERGE makes that a no-op;
* a file whose size or modification time changed has its old rows deleted, then re-ingested;
* the job asserts lines_read = accepted + rejected, and that the table holds exactly the
  accepted rows for the files it read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg import tables
from logberg.errors import ConfigError
from logberg.parse import enrich, parse_lines
from logberg.tables import qualified

if TYPE_CHECKING:
    from logberg.stream import FollowConfig

ONE_FILE_PER_SPLIT = str(1 << 40)  # each file is read whole by one task: exact line numbers
DT_RE = re.compile(r"/dt=(\d{4}-\d{2}-\d{2})/")


@dataclass(frozen=True)
class IngestConfig:
    inputs: list[str]
    since: dt.date | None = None
    full: bool = False
    max_bytes_per_commit: int = 2 << 30
    verify: bool = True
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    follow: FollowConfig | None = None  # --follow: continuous ingest (logberg.stream)


def default_landing() -> str:
    env = os.environ.get("LOGBERG_LANDING")
    if env:
        return env
    from logberg.settings import LocalSettings

    return LocalSettings.from_env().landing.as_uri()


def parse_args(argv: Sequence[str]) -> IngestConfig:
    p = argparse.ArgumentParser(prog="logberg ingest", description=__doc__.split("\n")[0])
    p.add_argument(
        "--input",
        action="append",
        default=None,
        metavar="URI",
        help="landing prefix(es) to scan for .log/.gz (default: LOGBERG_LANDING "
        "or $LOGBERG_HOME/landing)",
    )
    p.add_argument(
        "--since",
        type=dt.date.fromisoformat,
        default=None,
        metavar="DATE",
        help="only files under dt=DATE or later",
    )
    p.add_argument(
        "--full", action="store_true", help="re-read every file, ignoring the ledger (still exact)"
    )
    p.add_argument(
        "--max-bytes-per-commit",
        type=int,
        default=2 << 30,
        help="input bytes per commit (default 2 GiB)",
    )
    p.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="skip the post-commit row-count check",
    )
    from logberg import stream

    stream.add_follow_args(p)
    a = p.parse_args(list(argv))
    inputs = a.input or [default_landing()]
    for uri in inputs:
        if not re.match(r"^(file|s3a?|hdfs):", uri):
            raise ConfigError(f"--input {uri!r}: expected a file://, s3a:// or s3:// URI")
    if a.max_bytes_per_commit <= 0:
        raise ConfigError("--max-bytes-per-commit must be positive")
    return IngestConfig(
        inputs=inputs,
        since=a.since,
        full=a.full,
        max_bytes_per_commit=a.max_bytes_per_commit,
        verify=a.verify,
        follow=stream.follow_config(a),
    )


# ---- pure transforms -------------------------------------------------------------------


def event_id(source_file: Column, line_number: Column) -> Column:
    """Deterministic id: 64-bit hash of the file URI, then the line number."""
    return F.concat(
        F.lpad(F.hex(F.xxhash64(source_file)), 16, "0"), F.lit("-"), line_number.cast("string")
    )


ACCESS_COLUMNS = [
    "event_id",
    "ip_address",
    "remote_user",
    "timestamp",
    "date",
    "hour",
    "method",
    "url",
    "url_path",
    "query_string",
    "protocol",
    "request",
    "status_code",
    "status_category",
    "response_size",
    "referer",
    "user_agent",
    "forwarded_for",
    "device_type",
    "browser",
    "os",
    "is_bot",
    "file_extension",
    "year",
    "month",
    "day",
    "week_year",
    "week_of_year",
    "source_file",
    "line_number",
    "processed_timestamp",
]


def to_access_rows(parsed: DataFrame, processed_at: Column) -> DataFrame:
    ok = parsed.where(F.col("reject_reason").isNull())
    rows = enrich(ok).withColumn("processed_timestamp", processed_at)
    rows = rows.withColumn("event_id", event_id(F.col("source_file"), F.col("line_number")))
    return rows.select(*ACCESS_COLUMNS)


def to_rejects(parsed: DataFrame, run_id: str, rejected_at: Column) -> DataFrame:
    return parsed.where(F.col("reject_reason").isNotNull()).select(
        "source_file",
        "line_number",
        F.col("value").alias("raw_line"),
        F.col("reject_reason").alias("reason"),
        F.lit(run_id).alias("run_id"),
        rejected_at.alias("rejected_at"),
    )


# ---- IO ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFile:
    uri: str  # the encoded URI Spark reports as _metadata.file_path
    size: int
    modified: dt.datetime


def list_inputs(spark: SparkSession, cfg: IngestConfig) -> list[InputFile]:
    from pyspark.errors import AnalysisException

    try:
        listing = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.{log,gz}")
            .load(cfg.inputs)
            .select("path", "length", "modificationTime")
            .collect()
        )
    except AnalysisException as e:
        raise ConfigError(f"--input {cfg.inputs}: {str(e).splitlines()[0]}") from None
    jvm_path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
    files = []
    for row in listing:
        if "/_manifests/" in row.path:
            continue
        m = DT_RE.search(row.path)
        if cfg.since and m and dt.date.fromisoformat(m.group(1)) < cfg.since:
            continue
        files.append(
            InputFile(
                str(jvm_path(row.path).toUri().toString()), int(row.length), row.modificationTime
            )
        )
    return sorted(files, key=lambda f: f.uri)


def ledger_state(spark: SparkSession) -> dict[str, tuple[int, dt.datetime]]:
    rows = spark.sql(
        f"SELECT path, size, modification_time FROM (SELECT *, row_number() OVER "
        f"(PARTITION BY path ORDER BY ingested_at DESC) AS rn FROM {tables.LEDGER}) WHERE rn = 1"
    ).collect()
    return {r.path: (int(r.size), r.modification_time) for r in rows}


def plan(
    files: list[InputFile], seen: dict[str, tuple[int, dt.datetime]], full: bool
) -> tuple[list[InputFile], list[InputFile]]:
    """(to read, of which changed since their last ingest)."""
    todo, changed = [], []
    for f in files:
        prev = seen.get(f.uri)
        if prev is None or full:
            todo.append(f)
        elif prev != (f.size, f.modified):
            todo.append(f)
            changed.append(f)
    return todo, changed


def batches(files: list[InputFile], max_bytes: int) -> list[list[InputFile]]:
    out: list[list[InputFile]] = []
    cur: list[InputFile] = []
    size = 0
    for f in files:
        if cur and size + f.size > max_bytes:
            out.append(cur)
            cur, size = [], 0
        cur.append(f)
        size += f.size
    if cur:
        out.append(cur)
    return out


def read_lines(spark: SparkSession, files: list[InputFile]) -> DataFrame:
    """Non-empty lines with their file URI and 1-based line number.

    Each file is one input split (the session conf is set by `ingest`), so the row index in
    the partition, taken from monotonically_increasing_id, is the line index in the file.
    """
    raw = spark.read.text([f.uri for f in files])
    rows = raw.select(
        "value",
        F.col("_metadata.file_path").alias("source_file"),
        (F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1)) + 1).alias("line_number"),
    )
    return rows.where(F.length("value") > 0)


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


@dataclass
class BatchResult:
    files: int = 0
    lines: int = 0
    accepted: int = 0
    rejected: int = 0
    bytes: int = 0
    dates: set[dt.date] = field(default_factory=set)
    snapshot_id: int | None = None


def ingest_batch(
    spark: SparkSession, batch: list[InputFile], changed: set[str], cfg: IngestConfig
) -> BatchResult:
    uris = [f.uri for f in batch]
    if changed & set(uris):
        gone = _sql_list(sorted(changed & set(uris)))
        spark.sql(f"DELETE FROM {tables.ACCESS_LOGS} WHERE source_file IN ({gone})")
        spark.sql(f"DELETE FROM {tables.REJECTS} WHERE source_file IN ({gone})")

    lines = read_lines(spark, batch)
    if lines.rdd.getNumPartitions() != len(batch):
        raise RuntimeError("expected one input split per file; line numbers would be wrong")
    now = F.current_timestamp()
    parsed = parse_lines(lines).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # One job over the cached rows: per-file counts and the UTC days of the good rows.
        stats = (
            parsed.groupBy("source_file")
            .agg(
                F.count("*").alias("lines"),
                F.count("reject_reason").alias("rejected"),
                F.collect_set(
                    F.when(F.col("reject_reason").isNull(), F.to_date("timestamp"))
                ).alias("dates"),
            )
            .collect()
        )
        per_file = {r.source_file: (int(r.lines), int(r.rejected)) for r in stats}
        res = BatchResult(files=len(batch), bytes=sum(f.size for f in batch))
        res.dates = {d for r in stats for d in r.dates}
        res.lines = sum(n for n, _ in per_file.values())
        res.rejected = sum(r for _, r in per_file.values())
        res.accepted = res.lines - res.rejected

        access = to_access_rows(parsed, now)
        if res.dates:
            access.createOrReplaceTempView("logberg_ingest_batch")
            dates = _sql_list([d.isoformat() for d in sorted(res.dates)])
            spark.sql(
                f"""MERGE INTO {tables.ACCESS_LOGS} t USING logberg_ingest_batch s
                ON t.date IN ({dates}) AND t.date = s.date AND t.event_id = s.event_id
                WHEN NOT MATCHED THEN INSERT *"""
            )
            res.snapshot_id = latest_snapshot(spark, tables.ACCESS_LOGS)
        if res.rejected:
            to_rejects(parsed, cfg.run_id, now).createOrReplaceTempView("logberg_ingest_rejects")
            spark.sql(
                f"""MERGE INTO {tables.REJECTS} t USING logberg_ingest_rejects s
                ON t.source_file IN ({_sql_list(uris)})
                AND t.source_file = s.source_file AND t.line_number = s.line_number
                WHEN NOT MATCHED THEN INSERT *"""
            )
    finally:
        parsed.unpersist()

    if cfg.verify and res.dates and added_records(spark, res.snapshot_id) != res.accepted:
        # The MERGE inserted fewer rows than were read (a re-run after a crash, say):
        # count what the table holds for these files instead.
        stored = spark.sql(
            f"SELECT COUNT(*) FROM {tables.ACCESS_LOGS} WHERE date IN "
            f"({_sql_list([d.isoformat() for d in sorted(res.dates)])}) "
            f"AND source_file IN ({_sql_list(uris)})"
        ).collect()[0][0]
        if stored != res.accepted:
            raise RuntimeError(
                f"verification failed: table holds {stored} rows for this batch's files, "
                f"expected {res.accepted}"
            )

    # A crash from here on leaves committed data without a ledger entry: the next run reads
    # the files again and the MERGE on event_id turns that into a no-op.
    print(f"committed data for {len(batch)} file(s), snapshot {res.snapshot_id}", flush=True)
    ledger_rows = [
        (f.uri, f.size, f.modified, cfg.run_id, *per_file.get(f.uri, (0, 0))) for f in batch
    ]
    spark.createDataFrame(
        [(u, s, m, r, n, n - rej, rej) for (u, s, m, r, n, rej) in ledger_rows],
        "path STRING, size BIGINT, modification_time TIMESTAMP, run_id STRING, lines BIGINT, "
        "accepted BIGINT, rejected BIGINT",
    ).withColumn("ingested_at", F.current_timestamp()).writeTo(
        qualified(spark, tables.LEDGER)
    ).append()
    return res


def added_records(spark: SparkSession, snapshot_id: int | None) -> int | None:
    """Rows the given access_logs snapshot added, from its summary (no data scan)."""
    if snapshot_id is None:
        return None
    rows = spark.sql(
        f"SELECT summary['added-records'] FROM {tables.ACCESS_LOGS}.snapshots "
        f"WHERE snapshot_id = {snapshot_id}"
    ).collect()
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def run_row(
    run_id: str, started: dt.datetime, total: BatchResult, duration: float
) -> tuple[object, ...]:
    """One nginx_logs.ingest_runs row (batch runs and streaming micro-batches alike)."""
    return (
        run_id,
        started,
        dt.datetime.now(dt.timezone.utc),
        total.files,
        total.lines,
        total.accepted,
        total.rejected,
        total.bytes,
        duration,
        total.snapshot_id,
        sorted(total.dates),
        "ok",
    )


def latest_snapshot(spark: SparkSession, table: str) -> int | None:
    app = spark.sparkContext.applicationId
    rows = spark.sql(
        f"SELECT snapshot_id FROM {table}.snapshots WHERE summary['spark.app.id'] = '{app}' "
        "ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    return int(rows[0][0]) if rows else None


def ingest(spark: SparkSession, cfg: IngestConfig) -> BatchResult:
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    tables.create_ingest_tables(spark)
    files = list_inputs(spark, cfg)
    todo, changed = plan(files, {} if cfg.full else ledger_state(spark), cfg.full)
    saved: dict[str, str] = {
        k: str(spark.conf.get(k))
        for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    }
    total = BatchResult()
    try:
        spark.conf.set("spark.sql.files.maxPartitionBytes", ONE_FILE_PER_SPLIT)
        spark.conf.set("spark.sql.files.openCostInBytes", ONE_FILE_PER_SPLIT)
        for batch in batches(todo, cfg.max_bytes_per_commit):
            r = ingest_batch(spark, batch, {f.uri for f in changed}, cfg)
            total.files += r.files
            total.lines += r.lines
            total.accepted += r.accepted
            total.rejected += r.rejected
            total.bytes += r.bytes
            total.dates |= r.dates
            total.snapshot_id = r.snapshot_id or total.snapshot_id
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
    if total.lines != total.accepted + total.rejected:
        raise AssertionError(
            f"read {total.lines} != accepted {total.accepted} + rejected {total.rejected}"
        )
    duration = time.monotonic() - t0
    spark.createDataFrame(
        [run_row(cfg.run_id, started, total, duration)], tables.INGEST_RUNS_SCHEMA
    ).writeTo(qualified(spark, tables.INGEST_RUNS)).append()
    print(
        f"ingest {cfg.run_id}: files={total.files} (of {len(files)} seen, "
        f"{len(changed)} changed) lines_read={total.lines} accepted={total.accepted} "
        f"rejected={total.rejected} bytes={total.bytes} days={len(total.dates)} "
        f"snapshot={total.snapshot_id} duration={duration:.1f}s"
    )
    return total


def main(argv: Sequence[str]) -> int:
    from logberg.session import build_session

    cfg = parse_args(argv)
    if cfg.follow is not None:
        from logberg import stream

        return stream.main(cfg)
    spark = build_session("logberg-ingest")
    ingest(spark, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
