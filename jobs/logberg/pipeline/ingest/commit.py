"""Committing a batch exactly once: rows replace whatever their files had, by source_file.

* Every row's `event_id` derives from (source_file, line_number), so a line keeps its id.
* A batch of files is written with an overwrite by `source_file`: one commit replaces the
  rows those files had (none, normally) with their new rows, so a re-run, a re-run after a
  crash or a concurrent run of the same files adds nothing twice.
* The ledger is appended after the data commit: a crash between the two only makes the
  next run read those files again, and the overwrite makes that exact.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.lakehouse import sql
from logberg.lakehouse.connect import query
from logberg.lakehouse.rows import rows_frame
from logberg.lakehouse.schema import ACCESS_LOGS, INGEST_RUNS, LEDGER, REJECTS, Table
from logberg.lakehouse.tables import qualified
from logberg.pipeline.ingest.plan import InputFile
from logberg.pipeline.ingest.reader import RejectSink, read_parsed
from logberg.pipeline.logformat import Reading
from logberg.pipeline.parse import to_rejects

log = logging.getLogger(__name__)
TAG = "logberg.commit"  # snapshot summary key: which batch made the commit
# Iceberg's session conf prefix: snapshot properties of the session's SQL writes (MERGE).
SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."
FileRows = list[tuple[str, dt.date | None, int]]  # (source_file, date, rows)


def stored_rows(spark: SparkSession, table: Table, uris: Sequence[str]) -> tuple[FileRows, bool]:
    """(source_file, date, rows) that `table` holds for these files, and whether some data
    file mixes them with other files.

    Normally from data-file metadata, no data read: files ingest writes hold one source file
    each, and source_file has full column metrics, so a data file's bounds name its file.
    When that does not settle it (a compacted file whose bounds span one of `uris`,
    truncated bounds, delete files), the rows are counted, pruned by those metrics, and the
    second value is True: Iceberg cannot tell from metrics either whether such a file's
    rows match a filter on source_file.
    """
    want = set(uris)
    dated = table == ACCESS_LOGS  # the only one partitioned by date
    date = "date" if dated else "CAST(NULL AS DATE)"
    bounds = "readable_metrics.source_file"
    found = query(
        spark,
        f"SELECT content, {'partition.date' if dated else date} AS date, "
        f"{bounds}.lower_bound AS lo, {bounds}.upper_bound AS hi, record_count AS n "
        f"FROM {table}.files WHERE NOT ({bounds}.upper_bound < {sql.literal(min(uris))} "
        f"OR {bounds}.lower_bound > {sql.literal(max(uris))})",
    ).collect()
    out: FileRows = []
    for r in found:
        settled = r.content == 0 and r.lo is not None and r.hi is not None
        if settled and r.lo == r.hi:
            if r.lo in want:
                out.append((r.lo, r.date, int(r.n)))
        elif not settled or any(r.lo <= u <= r.hi for u in want):
            counted = query(
                spark,
                f"SELECT source_file, {date} AS date, COUNT(*) AS n FROM {table} "
                f"WHERE source_file IN ({sql.literals(uris)}) GROUP BY 1, 2",
            ).collect()
            return [(r.source_file, r.date, int(r.n)) for r in counted], True
    return out, False


def file_rows(spark: SparkSession, table: Table, uris: Sequence[str]) -> FileRows:
    """(source_file, date, rows) that `table` holds for these files (see `stored_rows`)."""
    return stored_rows(spark, table, uris)[0]


@dataclass(frozen=True)
class Committed:
    snapshot_id: int | None
    replaced: frozenset[str]  # files whose earlier rows the commit replaced
    # The rows the table holds for these files right after the commit, when its snapshot
    # says: an overwrite by source_file leaves exactly the rows it added. None after a
    # MERGE, whose added rows include the other rows of the data files it rewrote.
    held: int | None = None


def replace_rows(
    spark: SparkSession, table: Table, rows: DataFrame, uris: Sequence[str], tag: str
) -> Committed:
    """Commit `rows` as the whole content of these files in `table`, in one commit.

    Normally an overwrite by source_file: the data files of these files (each holds one) are
    dropped whole and the new ones added. If another writer commits the same files in the
    meantime, Iceberg re-applies the overwrite on top of it: the later commit wins, whole.
    When some data file mixes these files with others (compaction, or a rejects file of a
    batch), an overwrite would fail (Iceberg cannot tell from metrics which of its rows
    match); a MERGE then deletes the old rows of these files and inserts the new ones in one
    commit (`merge_rows`). It conflicts with a concurrent writer (serializable): the caller
    redoes the batch.

    Returns the commit's snapshot, which files already had rows (at planning, or committed
    by another writer before this commit landed) and, after an overwrite, how many rows the
    table holds for these files.
    """
    held, mixed = stored_rows(spark, table, uris)
    planned = sum(n for _, _, n in held)
    replaced = {f for f, _, _ in held}
    if mixed:
        # A SQL commit takes its snapshot properties from the session's conf (this client's
        # own, over Spark Connect): the tag marks it as this batch's, like the overwrite's.
        key = f"{SNAPSHOT_PROPERTY}{TAG}"
        spark.conf.set(key, tag)
        try:
            merge_rows(spark, table, rows, uris)
        finally:
            spark.conf.unset(key)
    else:
        rows.writeTo(qualified(spark, table)).option(f"snapshot-property.{TAG}", tag).overwrite(
            F.col("source_file").isin(list(uris))
        )
    found = query(
        spark,
        f"SELECT snapshot_id, summary['deleted-records'] AS deleted, "
        f"summary['added-records'] AS added FROM {table}.snapshots "
        f"WHERE summary[{sql.literal(TAG)}] = {sql.literal(tag)} "
        "ORDER BY committed_at DESC LIMIT 1",
    ).collect()
    if not found:
        return Committed(None, frozenset(replaced))
    snap = int(found[0].snapshot_id)
    if mixed:
        return Committed(snap, frozenset(replaced))
    if int(found[0].deleted or 0) > planned:  # committed by someone meanwhile
        replaced |= deleted_sources(spark, table, snap, uris)
    return Committed(snap, frozenset(replaced), int(found[0].added or 0))


def merge_rows(spark: SparkSession, table: Table, rows: DataFrame, uris: Sequence[str]) -> None:
    """Replace these files' rows in one MERGE: the source is the new rows plus a tombstone
    per old row of these files; only tombstones match (and delete), only new rows insert.
    The ON clause's equality on source_file lets Iceberg read and rewrite only the data
    files that may hold these files (runtime filtering): no NOT MATCHED BY SOURCE clause,
    which would rewrite the whole table.

    Built as a DataFrame (`mergeInto`), not SQL over a temp view: the rows' observed
    metrics (ingest's counts) then come back over Spark Connect too, which reports only
    the observations of the plan it was sent."""
    target = qualified(spark, table)
    cols = [F.col(sql.identifier(c)) for c in rows.columns]  # the table's, and its extras
    old = spark.table(target).where(F.col("source_file").isin(list(uris)))
    source = rows.select(*cols, F.lit(False).alias("_old")).unionByName(
        old.select(*cols, F.lit(True).alias("_old"))
    )
    t, s = f"{table.name}", "_s"

    def col(alias: str, name: str) -> Column:
        return F.col(f"{alias}.{sql.identifier(name)}")

    on = (
        col(s, "_old")
        & (col(t, "source_file") == col(s, "source_file"))
        & (col(t, "line_number") == col(s, "line_number"))
    )
    (
        source.alias(s)
        .mergeInto(target, on)
        .whenMatched()
        .delete()
        .whenNotMatched(~col(s, "_old"))
        .insert({sql.identifier(c): col(s, c) for c in rows.columns})
        .merge()
    )


def deleted_sources(
    spark: SparkSession, table: Table, snapshot_id: int, uris: Sequence[str]
) -> set[str]:
    """Which of these files had data files that this snapshot removed (metadata only)."""
    bounds = "readable_metrics.source_file"
    rows = query(
        spark,
        f"SELECT {bounds}.lower_bound AS lo, {bounds}.upper_bound AS hi "
        f"FROM {table}.all_entries WHERE snapshot_id = {snapshot_id} AND status = 2",
    ).collect()
    want = set(uris)
    return {r.lo for r in rows if r.lo is not None and r.lo == r.hi and r.lo in want}


def write_rejects(
    spark: SparkSession,
    uris: Sequence[str],
    rejected_by_file: dict[str, int],
    run_id: str,
    now: Column,
    tag: str,
    sink: RejectSink | None = None,
    reading: Reading | None = None,
) -> int:
    """Commit the rejected lines: the ones `sink` kept during the read, when it holds all
    of them; else the rejected lines of the files that have any, read again.

    Returns how many rejects the table holds for these files after the commit.
    """
    rejected = sum(rejected_by_file.values())
    if not rejected:
        old = sorted({f for f, _, _ in file_rows(spark, REJECTS, uris)})
        if old:  # a changed file that no longer has rejects
            spark.sql(f"DELETE FROM {REJECTS} WHERE source_file IN ({sql.literals(old)})")
        return 0
    kept = sink.lines() if sink is not None else None
    if kept is not None and kept[1] == rejected:
        located = kept[0]  # with their reasons: no second parse
        log.info("rejects: %d line(s) kept during the parse", rejected)
    else:
        log.info("rejects: %d line(s) read again from the files", rejected)
        located = read_parsed(spark, [u for u in uris if u in rejected_by_file], None, reading)
    fmt = (reading or Reading()).log_format.name
    done = replace_rows(spark, REJECTS, to_rejects(located, run_id, now, fmt), uris, tag)
    if done.held is not None:  # an overwrite: its snapshot's added rows, no count to run
        return done.held
    return sum(n for _, _, n in file_rows(spark, REJECTS, uris))


def append_ledger(
    spark: SparkSession,
    batch: Sequence[InputFile],
    run_id: str,
    accepted_by_file: dict[str, int],
    rejected_by_file: dict[str, int],
) -> None:
    rows = []
    for f in batch:
        ok, rej = accepted_by_file.get(f.uri, 0), rejected_by_file.get(f.uri, 0)
        rows.append((f.uri, f.size, f.modified, run_id, ok + rej, ok, rej, None))
    rows_frame(spark, rows, LEDGER.struct()).withColumn(
        "ingested_at", F.current_timestamp()
    ).writeTo(qualified(spark, LEDGER)).append()


def record_run(spark: SparkSession, row: tuple[object, ...], replayable: bool) -> None:
    """Add a run's ingest_runs row. A replayable run (a stream batch, whose id is the same
    on a replay) is MERGEd on run_id, so a replay does not add it twice."""
    df = rows_frame(spark, [row], INGEST_RUNS.struct())
    if not replayable:
        df.writeTo(qualified(spark, INGEST_RUNS)).append()
        return
    # A DataFrame MERGE, not SQL over a temporary view: nothing is left in the session.
    target = qualified(spark, INGEST_RUNS)
    (
        df.alias("s")
        .mergeInto(target, F.col(f"{INGEST_RUNS.name}.run_id") == F.col("s.run_id"))
        .whenNotMatched()
        .insertAll()
        .merge()
    )
