"""`logberg ingest --follow`: continuous ingest with Spark Structured Streaming.

A `text` file source over the landing prefix(es) discovers new .log/.gz files (at most
--max-files-per-trigger or --max-bytes-per-trigger per micro-batch). Each micro-batch only
contributes its file list (`_metadata`): the files are then read whole by the batch reader
(`logberg.ingest.ingest_batch`), so line numbers, event ids, rejects and the file ledger are
exactly those of a batch ingest of the same files.

Exactly once per micro-batch, across crashes and restarts:
* the checkpoint (default <warehouse>/_checkpoints/ingest) replays an unfinished batch with
  the same files and the same batch id;
* rows go in with ingest's overwrite by source_file, so a replay adds nothing twice;
* the batch's ingest_runs row has a deterministic run id (query id + batch id) and is
  MERGEd on it; nginx_logs.stream_batches records the batch last, and a batch found there
  is skipped.

Files must appear atomically (write elsewhere or under a hidden/.tmp name, then rename; S3
puts are atomic): the file source reads each path once and ignores later changes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg import tables
from logberg.errors import ConfigError
from logberg.tables import qualified

if TYPE_CHECKING:
    from logberg.ingest import BatchResult, IngestConfig, InputFile

STREAM_BATCHES = f"{tables.DATABASE}.stream_batches"
DEFAULT_MAX_FILES = 100
QUERY_START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class FollowConfig:
    trigger_seconds: float = 10.0
    max_files_per_trigger: int | None = DEFAULT_MAX_FILES
    max_bytes_per_trigger: int | None = None
    checkpoint: str | None = None  # default: <warehouse>/_checkpoints/ingest
    once: bool = False
    analytics_every: int = 1  # 0: never


def add_follow_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("continuous ingest (--follow)")
    g.add_argument(
        "--follow", action="store_true", help="keep ingesting new files (Structured Streaming)"
    )
    g.add_argument(
        "--once",
        action="store_true",
        help="with --follow: ingest what is there now, in micro-batches, then stop",
    )
    g.add_argument(
        "--trigger-seconds", type=float, default=None, help="micro-batch interval (default 10)"
    )
    g.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        help=f"files per micro-batch (default {DEFAULT_MAX_FILES})",
    )
    g.add_argument(
        "--max-bytes-per-trigger",
        type=int,
        default=None,
        help="input bytes per micro-batch (instead of --max-files-per-trigger)",
    )
    g.add_argument(
        "--checkpoint", default=None, metavar="URI", help="default <warehouse>/_checkpoints/ingest"
    )
    g.add_argument(
        "--analytics-every",
        type=int,
        default=None,
        metavar="N",
        help="refresh analytics after every N micro-batches (default 1; 0: never)",
    )


FOLLOW_ONLY = (
    "once",
    "trigger_seconds",
    "max_files_per_trigger",
    "max_bytes_per_trigger",
    "checkpoint",
    "analytics_every",
)


def follow_config(a: argparse.Namespace) -> FollowConfig | None:
    """The --follow settings from parsed args; None without --follow. Fails fast."""
    if not a.follow:
        for name in FOLLOW_ONLY:
            if getattr(a, name) not in (None, False):
                raise ConfigError(f"--{name.replace('_', '-')} needs --follow")
        return None
    if a.full:
        raise ConfigError("--full cannot be combined with --follow")
    if a.max_files_per_trigger is not None and a.max_bytes_per_trigger is not None:
        raise ConfigError("--max-files-per-trigger and --max-bytes-per-trigger: set only one")
    for name in ("trigger_seconds", "max_files_per_trigger", "max_bytes_per_trigger"):
        value = getattr(a, name)
        if value is not None and value <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} {value}: must be positive")
    if a.analytics_every is not None and a.analytics_every < 0:
        raise ConfigError(f"--analytics-every {a.analytics_every}: must not be negative")
    if a.checkpoint is not None and not re.match(r"^(file|s3a?|hdfs):", a.checkpoint):
        raise ConfigError(f"--checkpoint {a.checkpoint!r}: expected a file://, s3a:// or s3:// URI")
    by_bytes = a.max_bytes_per_trigger is not None
    return FollowConfig(
        trigger_seconds=a.trigger_seconds if a.trigger_seconds is not None else 10.0,
        max_files_per_trigger=None if by_bytes else a.max_files_per_trigger or DEFAULT_MAX_FILES,
        max_bytes_per_trigger=a.max_bytes_per_trigger,
        checkpoint=a.checkpoint,
        once=a.once,
        analytics_every=a.analytics_every if a.analytics_every is not None else 1,
    )


# ---- pure helpers ----------------------------------------------------------------------


def batch_run_id(query_id: str, batch_id: int) -> str:
    """Deterministic ingest run id of a micro-batch: the same on a replay."""
    return f"s{hashlib.sha1(query_id.encode()).hexdigest()[:8]}-{batch_id:08d}"


def file_columns(lines: DataFrame) -> DataFrame:
    """Each line's file, size and modification time (taken in the streaming plan: the
    micro-batch DataFrame no longer carries `_metadata`)."""
    return lines.select(
        F.col("_metadata.file_path").alias("uri"),
        F.col("_metadata.file_size").alias("size"),
        F.col("_metadata.file_modification_time").alias("modified"),
    )


def split_by_ledger(
    files: list[InputFile],
    ledger: dict[str, tuple[int, dt.datetime, str]],
    run_id: str,
) -> tuple[list[InputFile], list[InputFile]]:
    """(to ingest, of which changed). A file another run already ingested unchanged is
    skipped; one this run ingested before a crash is redone (the overwrite makes that exact)."""
    todo, changed = [], []
    for f in files:
        prev = ledger.get(f.uri)
        if prev is None or prev[2] == run_id:
            todo.append(f)
        elif prev[:2] != (f.size, f.modified):
            todo.append(f)
            changed.append(f)
    return todo, changed


# ---- IO ----------------------------------------------------------------------------------


def create_stream_tables(spark: SparkSession) -> None:
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {STREAM_BATCHES} (
            query_id STRING NOT NULL, batch_id BIGINT NOT NULL, run_id STRING,
            checkpoint STRING, files INT, lines_read BIGINT, accepted BIGINT,
            rejected BIGINT, committed_at TIMESTAMP)
        USING iceberg TBLPROPERTIES ({tables._props({"write.distribution-mode": "none"})})"""
    )


def default_checkpoint(spark: SparkSession) -> str:
    catalog = spark.catalog.currentCatalog()
    warehouse = spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None)
    if not warehouse:
        raise ConfigError(
            f"--checkpoint: not set, and spark.sql.catalog.{catalog}.warehouse is empty"
        )
    return warehouse.rstrip("/") + "/_checkpoints/ingest"


def already_committed(spark: SparkSession, query_id: str, batch_id: int) -> bool:
    return (
        spark.sql(
            f"SELECT 1 FROM {STREAM_BATCHES} WHERE query_id = '{query_id}' "
            f"AND batch_id = {batch_id} LIMIT 1"
        ).count()
        > 0
    )


def ledger_with_runs(
    spark: SparkSession, uris: list[str]
) -> dict[str, tuple[int, dt.datetime, str]]:
    from logberg.ingest import _sql_list

    rows = spark.sql(
        f"""SELECT path, size, modification_time, run_id FROM (
            SELECT *, row_number() OVER (PARTITION BY path ORDER BY ingested_at DESC) AS rn
            FROM {tables.LEDGER} WHERE path IN ({_sql_list(uris)})) WHERE rn = 1"""
    ).collect()
    return {r.path: (int(r.size), r.modification_time, str(r.run_id)) for r in rows}


def record_run(
    spark: SparkSession,
    run_id: str,
    started: dt.datetime,
    total: BatchResult,
    duration: float,
) -> None:
    """The micro-batch's ingest_runs row, MERGEd on run_id: a replay does not add it twice."""
    from logberg.ingest import run_row

    row = run_row(run_id, started, total, duration)
    spark.createDataFrame([row], tables.INGEST_RUNS_SCHEMA).createOrReplaceTempView(
        "logberg_stream_run"
    )
    spark.sql(
        f"""MERGE INTO {tables.INGEST_RUNS} t USING logberg_stream_run s ON t.run_id = s.run_id
        WHEN NOT MATCHED THEN INSERT *"""
    )


def ingest_files(
    spark: SparkSession,
    files: list[InputFile],
    cfg: IngestConfig,
    query_id: str,
    batch_id: int,
    checkpoint: str,
) -> BatchResult | None:
    """Ingest one micro-batch's files exactly once. None if the batch was already committed."""
    import time

    from logberg import ingest

    if already_committed(spark, query_id, batch_id):
        print(f"stream batch {batch_id}: already committed, skipped", flush=True)
        return None
    run_id = batch_run_id(query_id, batch_id)
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    todo, changed = split_by_ledger(
        files, ledger_with_runs(spark, [f.uri for f in files]) if files else {}, run_id
    )
    run_cfg = ingest.IngestConfig(
        inputs=cfg.inputs,
        max_bytes_per_commit=cfg.max_bytes_per_commit,
        verify=cfg.verify,
        run_id=run_id,
    )
    total = ingest.BatchResult()
    for part in ingest.batches(todo, cfg.max_bytes_per_commit):
        total.add(ingest.ingest_batch(spark, part, run_cfg))
    if total.lines != total.accepted + total.rejected:
        raise AssertionError(
            f"read {total.lines} != accepted {total.accepted} + rejected {total.rejected}"
        )
    record_run(spark, run_id, started, total, time.monotonic() - t0)
    spark.createDataFrame(
        [
            (
                query_id,
                batch_id,
                run_id,
                checkpoint,
                total.files,
                total.lines,
                total.accepted,
                total.rejected,
                dt.datetime.now(dt.timezone.utc),
            )
        ],
        "query_id STRING, batch_id BIGINT, run_id STRING, checkpoint STRING, files INT, "
        "lines_read BIGINT, accepted BIGINT, rejected BIGINT, committed_at TIMESTAMP",
    ).writeTo(qualified(spark, STREAM_BATCHES)).append()
    print(
        f"stream batch {batch_id} committed: run_id={run_id} files={total.files} "
        f"(of {len(files)} new, {len(changed)} changed) lines_read={total.lines} "
        f"accepted={total.accepted} rejected={total.rejected} snapshot={total.snapshot_id}",
        flush=True,
    )
    return total


def source(spark: SparkSession, cfg: IngestConfig, follow: FollowConfig) -> DataFrame:
    """New .log/.gz files under every --input prefix: a stream of (uri, size, modified)."""
    frames = []
    for uri in cfg.inputs:
        reader = (
            spark.readStream.format("text")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.{log,gz}")
        )
        if follow.max_bytes_per_trigger is not None:
            reader = reader.option("maxBytesPerTrigger", str(follow.max_bytes_per_trigger))
        elif follow.max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", str(follow.max_files_per_trigger))
        frames.append(file_columns(reader.load(uri)))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def keep(uri: str, since: dt.date | None) -> bool:
    from logberg.ingest import DT_RE

    if "/_manifests/" in uri:
        return False
    m = DT_RE.search(uri)
    return not (since and m and dt.date.fromisoformat(m.group(1)) < since)


def follow(spark: SparkSession, cfg: IngestConfig) -> int:
    """Run the stream until stopped (or, with --once, until the current files are in)."""
    from logberg import ingest
    from logberg.analytics import AnalyticsConfig, analytics

    fcfg = cfg.follow or FollowConfig()
    checkpoint = fcfg.checkpoint or default_checkpoint(spark)
    tables.create_ingest_tables(spark)
    create_stream_tables(spark)

    # The query id (kept in the checkpoint) is known once the query starts; batches wait.
    started = threading.Event()
    query_id: list[str] = []
    pending = [0]  # batches since the last analytics refresh

    def refresh(session: SparkSession) -> None:
        analytics(session, AnalyticsConfig())
        pending[0] = 0

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        if not started.wait(QUERY_START_TIMEOUT_S):
            raise RuntimeError("streaming query did not report its id")
        session = batch.sparkSession
        files = [
            ingest.InputFile(str(r.uri), int(r.size), r.modified)
            for r in batch.distinct().collect()
            if keep(str(r.uri), cfg.since)
        ]
        files.sort(key=lambda f: f.uri)
        done = ingest_files(session, files, cfg, query_id[0], batch_id, checkpoint)
        if done is not None:
            pending[0] += 1
        if fcfg.analytics_every and pending[0] >= fcfg.analytics_every:
            refresh(session)

    writer = (
        source(spark, cfg, fcfg)
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", checkpoint)
        .queryName("logberg-ingest")
    )
    if fcfg.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{fcfg.trigger_seconds:g} seconds")
    query = writer.start()
    query_id.append(str(query.id))
    started.set()
    print(f"streaming ingest {query.id}: checkpoint {checkpoint}", flush=True)
    query.awaitTermination()
    if fcfg.analytics_every and pending[0]:
        refresh(spark)
    return 0


def main(cfg: IngestConfig) -> int:
    from logberg.session import build_session

    return follow(build_session("logberg-ingest-follow"), cfg)
