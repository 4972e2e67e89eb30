"""`logberg ingest --follow`: continuous ingest with Spark Structured Streaming.

A `text` file source over the landing prefix(es) discovers new .log/.gz files (at most
--max-files-per-trigger or --max-bytes-per-trigger per micro-batch). Each micro-batch only
contributes its file list (`_metadata`): the files are then read whole by the batch engine
(`batch.run_batches`), so line numbers, event ids, rejects and the file ledger are exactly
those of a batch ingest of the same files.

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

import datetime as dt
import hashlib
import logging
import threading
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse import sql, tables
from logberg.lakehouse.rows import rows_frame
from logberg.lakehouse.schema import (
    ACCESS_LOGS,
    INGEST_RUNS,
    INGEST_TABLES,
    REJECTS,
    STREAM_BATCHES,
)
from logberg.lakehouse.tables import qualified
from logberg.pipeline.ingest.batch import IngestResult, record_run, run_batches
from logberg.pipeline.ingest.config import FollowConfig, IngestConfig
from logberg.pipeline.ingest.plan import InputFile, wanted

log = logging.getLogger(__name__)
QUERY_START_TIMEOUT_S = 600.0


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
            f"SELECT 1 FROM {STREAM_BATCHES} WHERE query_id = {sql.literal(query_id)} "
            f"AND batch_id = {batch_id} LIMIT 1"
        ).count()
        > 0
    )


def ingest_micro_batch(
    spark: SparkSession,
    files: list[InputFile],
    cfg: IngestConfig,
    query_id: str,
    batch_id: int,
    checkpoint: str,
) -> IngestResult | None:
    """Ingest one micro-batch's files exactly once. None if the batch was already committed."""
    if already_committed(spark, query_id, batch_id):
        log.info("stream batch %d: already committed, skipped", batch_id)
        return None
    run_id = batch_run_id(query_id, batch_id)
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    total, changed = run_batches(spark, files, cfg, run_id, ledger_of_these_only=True)
    duration = time.monotonic() - t0
    record_run(spark, run_id, started, total, duration, replayable=True, reading=cfg.reading)
    row = (
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
    rows_frame(spark, [row], STREAM_BATCHES.struct()).writeTo(
        qualified(spark, STREAM_BATCHES)
    ).append()
    return IngestResult(run_id, len(files), changed, total, duration)


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


def follow(
    spark: SparkSession,
    cfg: IngestConfig,
    on_result: Callable[[int, IngestResult], None],
    refresh: Callable[[SparkSession], None] | None,
) -> None:
    """Run the stream until stopped (or, with --once, until the current files are in).

    `on_result` gets each committed micro-batch's id and result; `refresh` (analytics) runs after
    every `analytics_every` committed batches and once at the end if any are pending."""
    fcfg = cfg.follow or FollowConfig()
    checkpoint = fcfg.checkpoint or default_checkpoint(spark)
    tables.ensure(
        spark, (*INGEST_TABLES, STREAM_BATCHES), upgrading=(ACCESS_LOGS, REJECTS, INGEST_RUNS)
    )

    # The query id (kept in the checkpoint) is known once the query starts; batches wait.
    started = threading.Event()
    query_id: list[str] = []
    pending = [0]  # batches since the last analytics refresh

    def maybe_refresh(session: SparkSession, force: bool = False) -> None:
        due = fcfg.analytics_every and pending[0] >= (1 if force else fcfg.analytics_every)
        if refresh is not None and due:
            refresh(session)
            pending[0] = 0

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        if not started.wait(QUERY_START_TIMEOUT_S):
            raise RuntimeError("streaming query did not report its id")
        session = batch.sparkSession
        files = sorted(
            (
                InputFile(str(r.uri), int(r.size), r.modified)
                for r in batch.distinct().collect()
                if wanted(str(r.uri), cfg.since)
            ),
            key=lambda f: f.uri,
        )
        result = ingest_micro_batch(session, files, cfg, query_id[0], batch_id, checkpoint)
        if result is not None:
            pending[0] += 1
            on_result(batch_id, result)
        maybe_refresh(session)

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
    log.info("streaming ingest %s: checkpoint %s", query.id, checkpoint)
    query.awaitTermination()
    maybe_refresh(spark, force=True)
