"""The batch engine of `logberg ingest`: raw nginx logs -> nginx_logs.access_logs, with
rejects, a file ledger, exact re-runs and incremental pick-up. `--follow` (stream.py) hands
its micro-batches to the same engine.

Every line read lands once, in access_logs or in the rejects table: after each commit the
job checks that the table holds exactly the accepted rows of the batch's files and that
the rejects commit added exactly the rejected lines (`IngestConfig.verify`).

Speed (bench/README.md): one parse per line, no cache, no shuffle of the rows; the reader
computes the derived columns too, classifying each distinct agent once; rejected lines are
kept (bounded) while the batch is written, so they need no second read.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from logberg.lakehouse import tables
from logberg.lakehouse.commit_retry import CommitRetry
from logberg.lakehouse.schema import ACCESS_LOGS, INGEST_RUNS, INGEST_TABLES, LEDGER, REJECTS
from logberg.pipeline.ingest import commit
from logberg.pipeline.ingest.config import IngestConfig
from logberg.pipeline.ingest.plan import InputFile, batches, ledger_state, list_inputs, plan
from logberg.pipeline.ingest.reader import RejectSink, read_good_rows
from logberg.pipeline.logformat import Reading
from logberg.pipeline.parse import access_columns

log = logging.getLogger(__name__)
COMMIT_RETRY = CommitRetry()  # a conflicted batch is redone (it is idempotent)


class VerificationError(RuntimeError):
    """The tables do not hold exactly the lines that were read."""


@dataclass
class BatchResult:
    files: int = 0
    lines: int = 0
    accepted: int = 0
    rejected: int = 0
    bytes: int = 0
    dates: set[dt.date] = field(default_factory=set)
    snapshot_id: int | None = None
    # Files new to the ledger whose rows were already in the table when this commit landed:
    # another writer (or a crashed run) had committed them; this commit replaced them, exactly.
    replaced_concurrent: int = 0
    retries: int = 0  # batches redone after a commit conflict
    seconds: dict[str, float] = field(default_factory=dict)  # per step, for bench/README.md

    def add(self, other: BatchResult) -> None:
        """Fold one batch's result into a run's total."""
        self.files += other.files
        self.lines += other.lines
        self.accepted += other.accepted
        self.rejected += other.rejected
        self.bytes += other.bytes
        self.dates |= other.dates
        self.snapshot_id = other.snapshot_id or self.snapshot_id
        self.replaced_concurrent += other.replaced_concurrent
        self.retries += other.retries
        for step, sec in other.seconds.items():
            self.seconds[step] = round(self.seconds.get(step, 0.0) + sec, 2)

    def timed(self, step: str, t0: float) -> float:
        now = time.monotonic()
        self.seconds[step] = round(self.seconds.get(step, 0.0) + now - t0, 2)
        return now


@dataclass(frozen=True)
class IngestResult:
    """What one ingest run (or one stream micro-batch) did."""

    run_id: str
    seen: int  # files listed
    changed: int  # of those read, how many had changed since their last ingest
    total: BatchResult
    duration_s: float

    def summary(self) -> str:
        t = self.total
        steps = ",".join(f"{k}:{v}" for k, v in t.seconds.items())
        return (
            f"ingest {self.run_id}: files={t.files} (of {self.seen} seen, {self.changed} "
            f"changed) lines_read={t.lines} accepted={t.accepted} rejected={t.rejected} "
            f"bytes={t.bytes} days={len(t.dates)} replaced_concurrent={t.replaced_concurrent} "
            f"retries={t.retries} snapshot={t.snapshot_id} duration={self.duration_s:.1f}s "
            f"steps={steps}"
        )


def ingest_batch(
    spark: SparkSession,
    batch: Sequence[InputFile],
    run_id: str,
    verify: bool = True,
    expected: frozenset[str] = frozenset(),
    reading: Reading | None = None,
    extras: Sequence[str] = (),
) -> BatchResult:
    """Read, parse and commit one batch of files:

    1. one read of the files, parsed as it is read (the derived columns and device
       classes included), writing access_logs; rejected lines are located (file, line)
       and kept in memory, bounded;
    2. the kept lines (or, over that bound, the files that have rejects, read again) into
       the rejects table; then the check, then the ledger.

    `expected`: files the ledger already lists (changed files, --full): their earlier rows
    are expected; rows of any other file were committed by another writer. `reading`: the
    log format and client rule; `extras`: access_logs' columns beyond ACCESS_LOGS (format
    columns and unknown log_format variables, `tables.add_columns`).
    """
    uris = [f.uri for f in batch]
    res = BatchResult(files=len(batch), bytes=sum(f.size for f in batch))

    tag = f"{run_id}-{uuid.uuid4().hex[:8]}"
    t = time.monotonic()
    reading = reading or Reading()

    sink = RejectSink(spark)
    # The reader gives the table's rows as they are written (the event id, calendar, status
    # and device columns included), keeps the rejected lines and counts each file's lines.
    stamp = dt.datetime.now(dt.timezone.utc)
    columns = access_columns(extras)
    access = read_good_rows(spark, uris, sink, reading, columns, ("processed_timestamp", stamp))
    committed = commit.replace_rows(spark, ACCESS_LOGS, access, uris, tag)
    res.snapshot_id = committed.snapshot_id
    res.replaced_concurrent = len(committed.replaced - expected)
    if res.replaced_concurrent:
        log.info(
            "%d file(s) already had rows another writer committed; replaced, exactly",
            res.replaced_concurrent,
        )
    t = res.timed("parse_write", t)
    counts = sink.counts()
    unread = [u for u in uris if u not in counts]
    if unread:
        raise VerificationError(f"the write did not read these files whole: {unread}")
    res.lines = sum(counts[u][0] for u in uris)
    res.rejected = sum(counts[u][1] for u in uris)
    res.accepted = res.lines - res.rejected
    rejected_by_file = {u: counts[u][1] for u in uris if counts[u][1]}
    now = F.lit(stamp)
    held_rej = commit.write_rejects(spark, uris, rejected_by_file, run_id, now, tag, sink, reading)
    t = res.timed("rejects", t)

    # What the table now holds for these files, per file and day: the ledger's counts, the
    # batch's days, and the check that every line read landed once (table or rejects).
    accepted_by_file: dict[str, int] = {}
    for uri, date, n in commit.file_rows(spark, ACCESS_LOGS, uris):
        accepted_by_file[uri] = accepted_by_file.get(uri, 0) + n
        if date is not None:
            res.dates.add(date)
    held = sum(accepted_by_file.values())
    if verify and (held != res.accepted or held_rej != res.rejected):
        raise VerificationError(
            f"verification failed: read {res.lines} lines; for these files {ACCESS_LOGS} "
            f"holds {held} rows and {REJECTS} {held_rej}, expected {res.accepted} and "
            f"{res.rejected}"
        )
    t = res.timed("verify", t)

    # A crash from here on leaves committed data without a ledger entry: the next run reads
    # the files again and replaces their rows, which changes nothing.
    log.info("committed %d file(s), snapshot %s", len(batch), res.snapshot_id)
    commit.append_ledger(spark, batch, run_id, accepted_by_file, rejected_by_file)
    res.timed("ledger", t)
    return res


def run_batches(
    spark: SparkSession,
    files: Sequence[InputFile],
    cfg: IngestConfig,
    run_id: str,
    ledger_of_these_only: bool = False,
) -> tuple[BatchResult, int]:
    """The engine, shared by batch ingest and every stream micro-batch: read the files the
    ledger says are due, batch by batch. Returns the total and how many had changed.

    `ledger_of_these_only`: look up only these files in the ledger (a micro-batch's few),
    instead of reading the whole ledger (a batch run's whole listing)."""
    # Read with --full too: the rows of the files it lists are this table's own, expected to
    # be replaced (not another writer's).
    state = (
        ledger_state(spark, [f.uri for f in files] if ledger_of_these_only else None)
        if files
        else {}
    )
    todo, changed = plan(files, state, cfg.full, run_id)
    total = BatchResult()
    extras = tables.add_columns(spark, ACCESS_LOGS, cfg.reading.columns())

    def ingest_retried(part: list[InputFile], expected: frozenset[str]) -> BatchResult:
        redone = 0

        def count() -> None:
            nonlocal redone
            redone += 1

        done = COMMIT_RETRY.run(
            partial(ingest_batch, spark, part, run_id, cfg.verify, expected, cfg.reading, extras),
            f"the ingest of {len(part)} file(s)",
            count,
        )
        done.retries = redone
        return done

    for part in batches(todo, cfg.max_bytes_per_commit):
        total.add(ingest_retried(part, frozenset(f.uri for f in part if f.uri in state)))
    return total, len(changed)


def record_run(
    spark: SparkSession,
    run_id: str,
    started: dt.datetime,
    total: BatchResult,
    duration: float,
    replayable: bool = False,
    reading: Reading | None = None,
) -> None:
    """The run's nginx_logs.ingest_runs row (batch runs and stream micro-batches alike)."""
    row = (
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
        total.replaced_concurrent,
        (reading or Reading()).log_format.label,
        (reading or Reading()).client.describe(),
    )
    commit.record_run(spark, row, replayable)


def ingest(spark: SparkSession, cfg: IngestConfig) -> IngestResult:
    """`logberg ingest`: every new or changed file under the inputs (all with --full)."""
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    created = tables.ensure(spark, INGEST_TABLES, upgrading=(ACCESS_LOGS, REJECTS, INGEST_RUNS))
    files = list_inputs(spark, cfg.inputs, cfg.since)
    if LEDGER.name in created:
        cfg = replace(cfg, full=True)  # an empty ledger: nothing to look up
    setup = round(time.monotonic() - t0, 2)
    total, changed = run_batches(spark, files, cfg, cfg.run_id)
    total.seconds = {"setup": setup, **total.seconds}
    duration = time.monotonic() - t0
    record_run(spark, cfg.run_id, started, total, duration, reading=cfg.reading)
    return IngestResult(cfg.run_id, len(files), changed, total, duration)
