"""`logberg ingest --from kafka://...`: nginx lines from a Kafka topic into the lakehouse,
with Spark Structured Streaming's Kafka source (spark-sql-kafka-0-10).

Each micro-batch (at most --max-messages-per-trigger messages; `--once`: the topic as it is
now, then stop) goes through the same parse, device classification and rejects as a file's
lines. Raw values are read by logberg's own reader (`reader`, `dev.logberg.KafkaLines`):
the batch's offset ranges, taken from the checkpoint's offset log (`offset_log`), are
fetched and parsed in one pass into the table's rows, as a file is (Spark's own batch is
left unread). Envelopes go through Spark's Kafka source and `messages.lines`, then
`parse.parse_lines`, `to_access_rows`, `to_rejects`.

Exactly once, across crashes, restarts, replays and writers side by side:
* a raw batch (each message identified by its partition and offset) replaces the rows of
  its offset ranges (`replace_range`): one write and no join, where new offsets delete
  nothing and a replayed range replaces its own rows; serializable, so a writer that lost
  a race to the same offsets redoes its batch. Where the ranges cut a data file (one
  compacted from several batches, another consumer's batch that ended elsewhere), and for
  envelopes (a shipper's identity, which may come twice in one batch or from several
  partitions), rows are MERGEd on their source identity (`event_id`, within the row's date
  partition): a replayed batch, a message delivered twice and a second consumer of the
  topic add nothing twice, and two identical requests at different offsets are two rows.
  The MERGE updates a matched row to itself, so Iceberg validates it against concurrent
  commits (serializable) too. The rejects are stored the same way;
* the batch's offset ranges go to nginx_logs.kafka_offsets after its rows (and its
  ingest_runs row, whose run id is made of the query id and batch id), so the table never
  says more than the lakehouse holds;
* Spark's checkpoint replays an unfinished batch with the same offsets, as the first batch
  of the next run: a first batch found in kafka_offsets is skipped, and its run row is
  MERGEd on the run id (it may be there: a crash between the run row and the offsets).
  A stream whose checkpoint is lost starts where the lakehouse ends: each partition's
  greatest `until_offset` in kafka_offsets.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse import kafka, sql, tables
from logberg.lakehouse.commit_retry import CommitRetry
from logberg.lakehouse.connect import query
from logberg.lakehouse.rows import rows_frame
from logberg.lakehouse.schema import (
    ACCESS_LOGS,
    INGEST_RUNS,
    INGEST_TABLES,
    KAFKA_OFFSETS,
    REJECTS,
    Table,
)
from logberg.lakehouse.tables import qualified
from logberg.pipeline.ingest.batch import BatchResult, record_run
from logberg.pipeline.ingest.reader import RejectSink
from logberg.pipeline.ingest.stream import batch_run_id
from logberg.pipeline.kafka import messages, offset_log, reader
from logberg.pipeline.kafka.config import KafkaIngestConfig
from logberg.pipeline.parse import access_columns, parse_lines, to_access_rows, to_rejects

log = logging.getLogger(__name__)
COMMIT_RETRY = CommitRetry()
QUERY_START_TIMEOUT_S = 600.0
TAG = "logberg.kafka.batch"  # snapshot summary key of the batch's access_logs commit
EARLIEST = -2  # Spark's startingOffsets for "the partition's first offset"
# Sources (raw: partitions; envelopes: shippers' files) a batch's MERGE names in its
# condition at most; beyond, it reads the whole of its days, as a MERGE does by itself.
MAX_BOUNDED_SOURCES = 1000


@dataclass
class KafkaBatchResult:
    """What one micro-batch did."""

    run_id: str
    batch_id: int
    messages: int = 0
    accepted: int = 0  # lines stored now
    duplicates: int = 0  # lines whose source identity the table held already
    rejected: int = 0
    bytes: int = 0
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> range
    dates: set[dt.date] = field(default_factory=set)
    lag: dict[int, int] = field(default_factory=dict)  # partition -> messages behind
    seconds: dict[str, float] = field(default_factory=dict)

    def timed(self, step: str, t0: float) -> float:
        now = time.monotonic()
        self.seconds[step] = round(self.seconds.get(step, 0.0) + now - t0, 2)
        return now

    def summary(self) -> str:
        ranges = ",".join(f"{p}:{a}-{b}" for p, (a, b) in sorted(self.offsets.items()))
        steps = ",".join(f"{k}:{v}" for k, v in self.seconds.items())
        return (
            f"kafka batch {self.batch_id} ({self.run_id}): messages={self.messages} "
            f"accepted={self.accepted} duplicates={self.duplicates} rejected={self.rejected} "
            f"bytes={self.bytes} offsets={ranges} days={len(self.dates)} "
            f"lag={sum(self.lag.values())} steps={steps}"
        )


def default_checkpoint(spark: SparkSession, topic: str) -> str:
    catalog = spark.catalog.currentCatalog()
    warehouse = spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None)
    if not warehouse:
        raise ConfigError(
            f"--checkpoint: not set, and spark.sql.catalog.{catalog}.warehouse is empty"
        )
    return f"{warehouse.rstrip('/')}/_checkpoints/kafka/{topic}"


def lakehouse_offsets(spark: SparkSession, topic: str) -> dict[int, int]:
    """Where the lakehouse ends in the topic: each partition's next offset to read."""
    rows = query(
        spark,
        f"SELECT `partition` AS p, max(until_offset) AS o FROM {KAFKA_OFFSETS} "
        f"WHERE topic = {sql.literal(topic)} GROUP BY 1",
    ).collect()
    return {int(r.p): int(r.o) for r in rows}


def starting_offsets(topic: str, partitions: list[int], ends: dict[int, int]) -> str:
    """Spark's startingOffsets (used only when the checkpoint has none): where the
    lakehouse ends, else each partition's first offset."""
    return json.dumps({topic: {str(p): ends.get(p, EARLIEST) for p in partitions}})


def already_committed(spark: SparkSession, query_id: str, batch_id: int) -> bool:
    return bool(
        query(
            spark,
            f"SELECT 1 FROM {KAFKA_OFFSETS} WHERE query_id = {sql.literal(query_id)} "
            f"AND batch_id = {batch_id} LIMIT 1",
        ).collect()
    )


def within_sources(alias: str | None, bounds: dict[str, tuple[int, int]]) -> Column | None:
    """A condition on a table's own lineage columns (`alias`.source_file, .line_number)
    that every row of the batch's sources satisfies: the source is one of `bounds` and the
    line number within that source's least and greatest. None for no sources, or more
    than MAX_BOUNDED_SOURCES (then the MERGE reads the days' files, as without it)."""
    if not bounds or len(bounds) > MAX_BOUNDED_SOURCES:
        return None
    at = f"{alias}." if alias else ""
    cond = None
    for source, (lo, hi) in sorted(bounds.items()):
        one = (F.col(f"{at}source_file") == F.lit(source)) & F.col(f"{at}line_number").between(
            F.lit(lo), F.lit(hi)
        )
        cond = one if cond is None else cond | one
    return cond


PARTIAL_FILE = "some, but not all, rows match filter"


def replace_range(
    spark: SparkSession,
    table: Table,
    rows: DataFrame,
    bounds: dict[str, tuple[int, int]],
    tag: str,
) -> bool:
    """Store a batch of messages identified by their coordinates (a raw value's source is
    its partition, its line number its offset) by replacing the table's rows of those
    coordinates: one write, no join. False when the table holds a data file that the
    coordinates cut through (the caller MERGEs instead).

    Every data file this path writes holds one partition's contiguous offsets (a task
    reads one partition's range, or one consecutive piece of it, and the table's writes
    do not shuffle).
    Rows of new offsets are then in no data file: nothing is deleted, the rows are added.
    A replayed range's rows are each file's whole content: the files are replaced. Any
    other overlap (a data file compacted from several batches, another consumer's batch
    that ended elsewhere) is a file only partly within the range, which Iceberg refuses to
    delete: False. Serializable isolation from the snapshot read first makes a concurrent
    commit of rows within the range a conflict (the caller's commit retry runs it again,
    on the new snapshot)."""
    cond = within_sources(None, bounds)
    if cond is None:
        return False
    target = qualified(spark, table)
    found = query(
        spark,
        f"SELECT snapshot_id FROM {target}.refs WHERE name = 'main'",
    ).collect()
    write = (
        rows.writeTo(target)
        .option(f"snapshot-property.{TAG}", tag)
        .option("isolation-level", "serializable")
    )
    if found:
        write = write.option("validate-from-snapshot-id", str(found[0].snapshot_id))
    try:
        write.overwrite(cond)
    except Exception as e:
        if PARTIAL_FILE in str(e):
            return False
        raise
    return True


def merge_new(
    spark: SparkSession,
    table: Table,
    rows: DataFrame,
    on: list[str],
    bounds: dict[str, tuple[int, int]] | None = None,
) -> None:
    """Insert the rows whose key (`on`) the table does not hold. A matched row is set to
    itself: the MERGE is then a row-level operation, which Iceberg validates against
    commits made since it read the table (an insert-only MERGE is a plain append, which
    a concurrent writer of the same rows would double).

    `bounds` (each source's least and greatest line number in the batch; the key derives
    from the source and line number) adds `within_sources` on the table's side of the
    condition: Iceberg then reads, and validates against, only the data files whose column
    bounds overlap the batch's. A batch of new offsets reads none, where it read every
    file of its days before (the MERGE's cost grew with the table)."""
    target = qualified(spark, table)
    t, s = table.name, "_s"

    def col(alias: str, name: str) -> Column:
        return F.col(f"{alias}.{sql.identifier(name)}")

    cond = None
    for k in on:
        eq = col(t, k) == col(s, k)
        cond = eq if cond is None else cond & eq
    assert cond is not None
    within = within_sources(t, bounds or {})
    if within is not None:
        cond = cond & within
    (
        rows.alias(s)
        .mergeInto(target, cond)
        .whenMatched()
        .update({sql.identifier(on[-1]): col(t, on[-1])})
        .whenNotMatched()
        .insert({sql.identifier(c): col(s, c) for c in rows.columns})
        .merge()
    )


def inserted(spark: SparkSession, table: Table, tag: str) -> int | None:
    """Rows the tagged MERGE added beyond those it rewrote (its own snapshot's summary)."""
    found = query(
        spark,
        f"SELECT summary['added-records'] AS a, summary['deleted-records'] AS d "
        f"FROM {table}.snapshots WHERE summary[{sql.literal(TAG)}] = {sql.literal(tag)} "
        "ORDER BY committed_at DESC LIMIT 1",
    ).collect()
    if not found:
        return None  # nothing to commit: every row was there
    return int(found[0].a or 0) - int(found[0].d or 0)


def commit_batch(
    spark: SparkSession,
    batch: DataFrame,
    cfg: KafkaIngestConfig,
    query_id: str,
    batch_id: int,
    checkpoint: str,
    may_replay: bool = True,
) -> KafkaBatchResult | None:
    """Store one micro-batch exactly once. None when it was committed already.

    `may_replay`: the batch may have run before (the first batch a process runs for its
    query: Spark replays the batch a stopped run left unfinished). Its offsets are looked
    up and its ingest_runs row MERGEd; a later batch is new (a failed batch ends the query),
    so its run row is appended and nothing is looked up. Its rows are stored exactly
    either way (`replace_range`, else `merge_new`)."""
    if may_replay and already_committed(spark, query_id, batch_id):
        log.info("kafka batch %d: already committed, skipped", batch_id)
        return None
    run_id = batch_run_id(query_id, batch_id)
    res = KafkaBatchResult(run_id, batch_id)
    started = dt.datetime.now(dt.timezone.utc)
    t0 = t = time.monotonic()
    staged = messages.lines(batch, cfg.value, cfg.max_line_bytes)
    staged = staged.persist(StorageLevel.MEMORY_AND_DISK)
    parsed: DataFrame | None = None
    try:
        # Per partition and source: a raw message's source is its partition (one row
        # each); an envelope's is the shipper's file (one row per file and partition).
        ranges = staged.groupBy("partition", "source_file").agg(
            F.min("offset").alias("lo"),
            F.max("offset").alias("hi"),
            F.min("line_number").alias("first"),
            F.max("line_number").alias("last"),
            F.count(F.lit(1)).alias("n"),
            F.sum(F.coalesce(F.length(F.col("value")), F.lit(0))).alias("b"),
            F.sum(F.col("bad").isNotNull().cast("int")).alias("bad"),
        )
        bounds: dict[str, tuple[int, int]] = {}
        for r in ranges.collect():
            p, lo, until = int(r.partition), int(r.lo), int(r.hi) + 1
            was = res.offsets.get(p, (lo, until))
            res.offsets[p] = (min(was[0], lo), max(was[1], until))
            first, last = int(r.first), int(r.last)
            was = bounds.get(r.source_file, (first, last))
            bounds[r.source_file] = (min(was[0], first), max(was[1], last))
            res.messages += int(r.n)
            res.bytes += int(r.b or 0)
            res.rejected += int(r.bad or 0)
        t = res.timed("read", t)
        if not res.messages:
            return None
        good = staged.where(F.col("bad").isNull()).select("source_file", "line_number", "value")
        if cfg.value.field is not None:  # a shipper's identity: the same line may come twice
            good = good.dropDuplicates(["source_file", "line_number"])
        parsed = parse_lines(good)
        if cfg.value.field is not None:
            # Read twice more (the counts, the rejects): the duplicates dropped once. A raw
            # batch parses again instead, which costs less than caching the parsed rows.
            parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
        stamp = dt.datetime.now(dt.timezone.utc)
        extras = tables.add_columns(spark, ACCESS_LOGS, ())
        rows = to_access_rows(parsed, F.lit(stamp), extras)
        tag = f"{run_id}-{batch_id}"
        key = f"spark.sql.iceberg.snapshot-property.{TAG}"

        def store() -> int | None:
            spark.conf.set(key, tag)
            try:
                if cfg.value.field is not None or not replace_range(
                    spark, ACCESS_LOGS, rows, bounds, tag
                ):
                    merge_new(spark, ACCESS_LOGS, rows, ["date", "event_id"], bounds)
            finally:
                spark.conf.unset(key)
            return inserted(spark, ACCESS_LOGS, tag)

        new = COMMIT_RETRY.run(store, f"the rows of kafka batch {batch_id}")
        # Good and rejected lines, and the good ones' days, in one pass over the cache.
        tally = (
            parsed.groupBy(
                F.col("reject_reason").isNull().alias("ok"),
                F.when(F.col("reject_reason").isNull(), F.to_date("timestamp")).alias("date"),
            )
            .count()
            .collect()
        )
        good_lines = sum(int(c["count"]) for c in tally if c.ok)
        parse_rejects = sum(int(c["count"]) for c in tally if not c.ok)
        res.accepted = new if new is not None else 0
        res.rejected += parse_rejects
        res.duplicates = res.messages - res.accepted - res.rejected
        res.dates = {c.date for c in tally if c.ok}
        t = res.timed("parse_write", t)
        if res.rejected:
            now = F.lit(stamp)
            rejects = to_rejects(parsed, run_id, now).unionByName(
                messages.bad_messages(staged, run_id, now)
            )
            if cfg.value.field is not None:
                rejects = rejects.dropDuplicates(["source_file", "line_number"])

            def store_rejects() -> None:
                if cfg.value.field is not None or not replace_range(
                    spark, REJECTS, rejects, bounds, tag
                ):
                    merge_new(spark, REJECTS, rejects, ["source_file", "line_number"], bounds)

            COMMIT_RETRY.run(store_rejects, f"the rejects of kafka batch {batch_id}")
        t = res.timed("rejects", t)
        log.info("kafka batch %d: %d new rows (%d good lines)", batch_id, res.accepted, good_lines)
    finally:
        staged.unpersist()
        if parsed is not None:
            parsed.unpersist()
    return record_batch(spark, cfg, res, query_id, checkpoint, (started, t0, t), may_replay)


def commit_ranges(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    query_id: str,
    batch_id: int,
    checkpoint: str,
    may_replay: bool = True,
) -> KafkaBatchResult | None:
    """Store the offset ranges of one micro-batch of raw lines exactly once, reading them
    itself (`reader.read_good_rows`: each message parsed as it is fetched, into the table's
    rows, as the file ingest reads a file); Spark's batch DataFrame is never read. As
    `commit_batch` otherwise: the ranges replace their rows (`replace_range`, else
    `merge_new`), then the rejects, the run row and the offsets. None when the batch was
    committed already or holds nothing."""
    if may_replay and already_committed(spark, query_id, batch_id):
        log.info("kafka batch %d: already committed, skipped", batch_id)
        return None
    if not ranges:
        return None
    run_id = batch_run_id(query_id, batch_id)
    res = KafkaBatchResult(run_id, batch_id, offsets=dict(ranges))
    started = dt.datetime.now(dt.timezone.utc)
    t0 = t = time.monotonic()
    topic = cfg.source.topic
    sources = {reader.source_file(topic, p): (lo, until - 1) for p, (lo, until) in ranges.items()}
    sink = RejectSink(spark)
    partitions = reader.read_partitions(spark, cfg)  # the same pieces on a retried write
    stamp = dt.datetime.now(dt.timezone.utc)
    extras = tables.add_columns(spark, ACCESS_LOGS, ())
    tag = f"{run_id}-{batch_id}"
    key = f"spark.sql.iceberg.snapshot-property.{TAG}"

    def store() -> int | None:
        rows = reader.read_good_rows(
            spark,
            cfg,
            ranges,
            sink,
            access_columns(extras),
            ("processed_timestamp", stamp),
            partitions,
        )
        spark.conf.set(key, tag)
        try:
            if not replace_range(spark, ACCESS_LOGS, rows, sources, tag):
                merge_new(spark, ACCESS_LOGS, rows, ["date", "event_id"], sources)
        finally:
            spark.conf.unset(key)
        return inserted(spark, ACCESS_LOGS, tag)

    new = COMMIT_RETRY.run(store, f"the rows of kafka batch {batch_id}")
    counts = sink.counts()
    unread = sorted(set(sources) - set(counts))
    if unread:
        raise RuntimeError(f"kafka batch {batch_id}: the write did not read {unread} whole")
    res.messages = sum(counts[src][0] for src in sources)
    res.rejected = sum(counts[src][1] for src in sources)
    res.bytes = sum(counts[src][2] for src in sources)
    res.accepted = new if new is not None else 0
    res.duplicates = res.messages - res.accepted - res.rejected
    within = within_sources(None, sources)
    assert within is not None
    held = spark.table(qualified(spark, ACCESS_LOGS)).where(within)
    res.dates = {r.date for r in held.select("date").distinct().collect()}
    t = res.timed("read_parse_write", t)
    if res.rejected:
        kept = sink.lines()
        if kept is not None and kept[1] == res.rejected:
            located = kept[0]
        else:  # over the sink's budget: read the ranges again, rejects only
            located = reader.read_messages(spark, cfg, ranges, partitions)
        rejects = to_rejects(located, run_id, F.lit(stamp))

        def store_rejects() -> None:
            if not replace_range(spark, REJECTS, rejects, sources, tag):
                merge_new(spark, REJECTS, rejects, ["source_file", "line_number"], sources)

        COMMIT_RETRY.run(store_rejects, f"the rejects of kafka batch {batch_id}")
    else:
        sink.lines()  # releases the collector
    t = res.timed("rejects", t)
    log.info("kafka batch %d: %d new rows", batch_id, res.accepted)
    return record_batch(spark, cfg, res, query_id, checkpoint, (started, t0, t), may_replay)


def record_batch(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    res: KafkaBatchResult,
    query_id: str,
    checkpoint: str,
    clock: tuple[dt.datetime, float, float],
    may_replay: bool,
) -> KafkaBatchResult:
    """The ledger of a stored batch: its ingest_runs row, then its offsets (last: a batch
    whose offsets are in the lakehouse is whole). `clock`: when the batch started (UTC), and
    the monotonic times of its start and of its last step."""
    started, t0, t = clock
    total = BatchResult(
        files=len(res.offsets),
        lines=res.messages,
        accepted=res.accepted,
        rejected=res.rejected,
        bytes=res.bytes,
        dates=res.dates,
        seconds=res.seconds,
    )
    record_run(spark, res.run_id, started, total, time.monotonic() - t0, replayable=may_replay)
    record_offsets(spark, cfg, res, query_id, checkpoint)
    res.timed("ledger", t)
    return res


def record_offsets(
    spark: SparkSession, cfg: KafkaIngestConfig, res: KafkaBatchResult, query_id: str, cp: str
) -> None:
    """The batch's offset ranges, last, in one append: a batch found here is never run
    again (`already_committed`), and a batch that crashed before this commit has none."""
    now = dt.datetime.now(dt.timezone.utc)
    rows = [
        (
            cfg.source.topic, p, lo, until, query_id, res.batch_id, res.run_id, cp,
            until - lo,
            # the batch's counts are the batch's, not per partition: on its first row
            res.accepted if i == 0 else 0,
            res.rejected if i == 0 else 0,
            res.duplicates if i == 0 else 0,
            now,
        )
        for i, (p, (lo, until)) in enumerate(sorted(res.offsets.items()))
    ]  # fmt: skip
    rows_frame(spark, rows, KAFKA_OFFSETS.struct()).writeTo(
        qualified(spark, KAFKA_OFFSETS)
    ).append()


def ingest_topic(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    on_result: Callable[[KafkaBatchResult], None],
    refresh: Callable[[SparkSession], None] | None,
) -> None:
    """Run the stream until stopped (with --once, until the topic as it was is in)."""
    partitions = kafka.partitions(cfg.source)  # a wrong broker or topic fails here
    tables.ensure(
        spark, (*INGEST_TABLES, KAFKA_OFFSETS), upgrading=(ACCESS_LOGS, REJECTS, INGEST_RUNS)
    )
    checkpoint = cfg.checkpoint or default_checkpoint(spark, cfg.source.topic)
    ends = lakehouse_offsets(spark, cfg.source.topic)
    positions = {p: ends.get(p, 0) for p in partitions}
    started = threading.Event()
    query_id: list[str] = []
    pending = [0]
    ran = [False]  # a batch of this query ran in this process: later ones are new

    def maybe_refresh(session: SparkSession, force: bool = False) -> None:
        due = cfg.analytics_every and pending[0] >= (1 if force else cfg.analytics_every)
        if refresh is not None and due:
            refresh(session)
            pending[0] = 0

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        if not started.wait(QUERY_START_TIMEOUT_S):
            raise RuntimeError("streaming query did not report its id")
        session = batch.sparkSession
        if cfg.value.field is None:  # raw lines: read by KafkaLines, the batch left unread
            ranges = offset_log.batch_ranges(session, checkpoint, batch_id, cfg.source.topic)
            result = commit_ranges(
                session, cfg, ranges, query_id[0], batch_id, checkpoint, may_replay=not ran[0]
            )
        else:
            result = commit_batch(
                session, batch, cfg, query_id[0], batch_id, checkpoint, may_replay=not ran[0]
            )
        ran[0] = True
        if result is None:
            return
        for p, (_, until) in result.offsets.items():
            positions[p] = until
        try:
            end = kafka.end_offsets(cfg.source)
            result.lag = {p: max(0, end.get(p, 0) - positions.get(p, 0)) for p in end}
        except ConfigError as e:  # the broker away for a moment: lag unknown this time
            log.warning("kafka lag: %s", e)
        pending[0] += 1
        on_result(result)
        maybe_refresh(session)

    parallelism = int(spark.conf.get("spark.default.parallelism", "2") or 2)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.source.bootstrap)
        .option("subscribe", cfg.source.topic)
        .option("startingOffsets", starting_offsets(cfg.source.topic, partitions, ends))
        .option("maxOffsetsPerTrigger", str(cfg.messages_per_trigger))
        .option("minPartitions", str(max(2, parallelism)))
        .option("failOnDataLoss", "true")
        .option("groupIdPrefix", "logberg-ingest")
        .option("kafka.max.partition.fetch.bytes", str(32 << 20))
        .option("kafka.fetch.max.bytes", str(64 << 20))
        .options(**cfg.source.options.jvm())  # the clients' own (security: MSK's IAM)
    )
    writer = (
        reader.load()
        .select("topic", "partition", "offset", "value")
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", checkpoint)
        .queryName(f"logberg-ingest-kafka-{cfg.source.topic}")
    )
    if cfg.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{cfg.trigger_seconds:g} seconds")
    stream = writer.start()
    query_id.append(str(stream.id))
    started.set()
    log.info("kafka ingest %s from %s: checkpoint %s", stream.id, cfg.source.uri, checkpoint)
    stream.awaitTermination()
    maybe_refresh(spark, force=True)
