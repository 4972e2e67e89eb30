"""`logberg ingest`: raw nginx logs -> nginx_logs.access_logs, with rejects, a file ledger,
exact re-runs and incremental pick-up. Runs unchanged locally and as a SparkApplication.

Exactness:
* every row's `event_id` is derived from (source_file, line_number), so the same line always
  has the same id;
* a batch of files is written with an overwrite by `source_file`: one commit replaces
  whatever rows those files had (none, normally) with their new rows, so a re-run, or a
  re-run after a crash, adds nothing twice;
* the ledger (nginx_logs.ingested_files) is appended after the data commit: a crash between
  the two only makes the next run read those files again, and the overwrite makes that exact;
* a file whose size or modification time changed is read again and its rows replaced;
* the job asserts lines_read = accepted + rejected from independent counts (a line count
  per file, the parse, and the rows each commit added).

Speed (bench/README.md): one parse per line, no cache, no shuffle of the rows; agents are
classified once per distinct agent; rejected lines are kept (bounded) while the batch is
written, so they need no second read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from logberg import tables
from logberg.devices import agent_lookup
from logberg.errors import ConfigError
from logberg.parse import LINES_SOURCE, RejectSink, enrich, parser_return_type
from logberg.tables import qualified

if TYPE_CHECKING:
    from logberg.stream import FollowConfig

DT_RE = re.compile(r"/dt=(\d{4}-\d{2}-\d{2})/")
# The agent lookup comes from the first SAMPLE_BYTES of up to SAMPLE_FILES files of a batch,
# read by the driver; agents it misses are classified row by row (same result).
SAMPLE_FILES = 16
SAMPLE_BYTES = 512 << 10
MAX_LOOKUP_AGENTS = 5_000
# Rejected lines are kept while a batch is written, up to this many characters; beyond it
# (a batch of mostly garbage) they are read from the files again.
REJECT_BUDGET_CHARS = 32 << 20
TAG = "logberg.commit"  # snapshot summary key: which batch made the commit


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


def to_access_rows(
    parsed: DataFrame, processed_at: Column, agents: DataFrame | None = None
) -> DataFrame:
    ok = parsed.where(F.col("reject_reason").isNull())
    rows = enrich(ok, agents).withColumn("processed_timestamp", processed_at)
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
    uri: str  # the encoded URI (Hadoop's Path.toUri): the rows' source_file
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


def read_parsed(
    spark: SparkSession, uris: Sequence[str], sink: RejectSink | None = None
) -> DataFrame:
    """The lines of these files, parsed as they are read (`dev.logberg.LogLines`).

    Columns: source_file (the URI as given), line_number (1-based; empty lines are counted,
    not returned), value (the raw line of a rejected line, else NULL), then the fields of
    `parse_lines`. Each file is read whole by one task. Rejected lines also go to `sink`.
    """
    parser_return_type(spark)  # logberg's jar is on the class path, or a clear error
    reader = spark.read.format(LINES_SOURCE).option("files", "\n".join(uris))
    if sink is not None:
        reader = reader.option("rejects", sink.id)
    return reader.load()


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def head_bytes(spark: SparkSession, uri: str, n: int) -> bytes:
    """Up to `n` bytes from the start of a file (decompressed for .gz), via Hadoop's FS."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri))  # uri is encoded
    stream = path.getFileSystem(conf).open(path)
    try:
        codec = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(conf).getCodec(path)
        source = codec.createInputStream(stream) if codec is not None else stream
        return bytes(source.readNBytes(n))
    finally:
        stream.close()


def sample_agents(spark: SparkSession, files: list[InputFile]) -> list[str]:
    """The most frequent agents (6th quoted field) at the start of some of the files."""
    from py4j.protocol import Py4JJavaError

    counts: Counter[bytes] = Counter()
    for f in files[:: max(1, len(files) // SAMPLE_FILES)][:SAMPLE_FILES]:
        try:
            data = head_bytes(spark, f.uri, SAMPLE_BYTES)
        except Py4JJavaError:
            continue  # unreadable here: the real read reports it
        lines = data.split(b"\n")
        for line in lines[:-1] if len(data) == SAMPLE_BYTES else lines:  # last one may be cut
            parts = line.split(b'"', 6)
            if len(parts) == 7:
                counts[parts[5]] += 1
    agents = []
    for agent, _ in counts.most_common(MAX_LOOKUP_AGENTS):
        try:
            agents.append(agent.decode("utf-8"))
        except UnicodeDecodeError:
            continue  # classified row by row
    return agents


def file_index(uris: Sequence[str]) -> Column:
    """The row's source_file as its 1-based index in `uris` (an INT, not the URI)."""
    return F.array_position(F.array(*[F.lit(u) for u in uris]), F.col("source_file"))


@dataclass
class BatchResult:
    files: int = 0
    lines: int = 0
    accepted: int = 0
    rejected: int = 0
    bytes: int = 0
    dates: set[dt.date] = field(default_factory=set)
    snapshot_id: int | None = None
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
        for step, sec in other.seconds.items():
            self.seconds[step] = round(self.seconds.get(step, 0.0) + sec, 2)

    def timed(self, step: str, t0: float) -> float:
        now = time.monotonic()
        self.seconds[step] = round(self.seconds.get(step, 0.0) + now - t0, 2)
        return now


def stored_rows(
    spark: SparkSession, table: str, uris: Sequence[str]
) -> tuple[list[tuple[str, dt.date | None, int]], bool]:
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
    dated = table == tables.ACCESS_LOGS  # the only one partitioned by date
    date = "date" if dated else "CAST(NULL AS DATE)"
    bounds = "readable_metrics.source_file"
    found = spark.sql(
        f"SELECT content, {'partition.date' if dated else date} AS date, "
        f"{bounds}.lower_bound AS lo, {bounds}.upper_bound AS hi, record_count AS n "
        f"FROM {table}.files WHERE NOT ({bounds}.upper_bound < {_sql_list([min(uris)])} "
        f"OR {bounds}.lower_bound > {_sql_list([max(uris)])})"
    ).collect()
    out: list[tuple[str, dt.date | None, int]] = []
    for r in found:
        settled = r.content == 0 and r.lo is not None and r.hi is not None
        if settled and r.lo == r.hi:
            if r.lo in want:
                out.append((r.lo, r.date, int(r.n)))
        elif not settled or any(r.lo <= u <= r.hi for u in want):
            counted = spark.sql(
                f"SELECT source_file, {date} AS date, COUNT(*) AS n FROM {table} "
                f"WHERE source_file IN ({_sql_list(uris)}) GROUP BY 1, 2"
            ).collect()
            return [(r.source_file, r.date, int(r.n)) for r in counted], True
    return out, False


def file_rows(
    spark: SparkSession, table: str, uris: Sequence[str]
) -> list[tuple[str, dt.date | None, int]]:
    """(source_file, date, rows) that `table` holds for these files (see `stored_rows`)."""
    return stored_rows(spark, table, uris)[0]


def stored_files(spark: SparkSession, table: str, uris: Sequence[str]) -> list[str]:
    """Which of these files already have rows (a re-run, a crash re-run, a changed file)."""
    return sorted({f for f, _, _ in file_rows(spark, table, uris)})


def replace_rows(
    spark: SparkSession, table: str, rows: DataFrame, uris: Sequence[str], tag: str
) -> tuple[int | None, int]:
    """Commit `rows` as the whole content of these files in `table`.

    Normally one commit: an overwrite by source_file (data files of these files only are
    dropped, whole). Rows that share data files with other files (after compaction) are
    deleted row-level first; and then the rows are appended instead (an overwrite would
    fail: Iceberg cannot tell from metrics that none of a mixed file's rows match).
    Returns the commit's snapshot id and the rows it added, found by `tag` in the snapshot
    summary.
    """
    held, mixed = stored_rows(spark, table, uris)
    old = sorted({f for f, _, _ in held})
    if old:
        spark.sql(f"DELETE FROM {table} WHERE source_file IN ({_sql_list(old)})")
    writer = rows.writeTo(qualified(spark, table)).option(f"snapshot-property.{TAG}", tag)
    if mixed:
        writer.append()  # these files have no rows left: appending is exact
    else:
        writer.overwrite(F.col("source_file").isin(list(uris)))
    found = spark.sql(
        f"SELECT snapshot_id, summary['added-records'] FROM {table}.snapshots "
        f"WHERE summary['{TAG}'] = '{tag}'"
    ).collect()
    if not found:
        return None, 0
    return int(found[0][0]), int(found[0][1] or 0)


def ingest_batch(spark: SparkSession, batch: list[InputFile], cfg: IngestConfig) -> BatchResult:
    """Read, parse and commit one batch of files:

    1. the agent lookup table, from the agents at the head of some files (driver-side);
    2. one read of the files, parsed as it is read, writing access_logs; rejected lines are
       located (file, line) and kept in memory, bounded;
    3. the kept lines (or, over that bound, the files that have rejects, read again) into
       the rejects table.
    """
    uris = [f.uri for f in batch]
    res = BatchResult(files=len(batch), bytes=sum(f.size for f in batch))

    tag = f"{cfg.run_id}-{uuid.uuid4().hex[:8]}"
    t = time.monotonic()
    lookup = agent_lookup(spark, sample_agents(spark, batch))
    t = res.timed("agents", t)

    seen = Observation("logberg_ingest")
    sink = RejectSink(spark, REJECT_BUDGET_CHARS)
    parsed = read_parsed(spark, uris, sink).observe(
        seen,
        F.count(F.lit(1)).alias("lines"),
        F.count("reject_reason").alias("rejected"),
        F.collect_list(F.when(F.col("reject_reason").isNotNull(), file_index(uris))).alias(
            "rejects"
        ),
    )
    now = F.current_timestamp()
    access = to_access_rows(parsed, now, lookup)
    res.snapshot_id, _ = replace_rows(spark, tables.ACCESS_LOGS, access, uris, tag)
    t = res.timed("parse_write", t)
    m = seen.get
    res.lines, res.rejected = int(m["lines"]), int(m["rejected"])
    res.accepted = res.lines - res.rejected
    rejected_by_file = {uris[i - 1]: n for i, n in Counter(m["rejects"]).items()}
    if sum(rejected_by_file.values()) != res.rejected:
        raise RuntimeError(f"{res.rejected} lines rejected but {len(m['rejects'])} located")
    added_rej = write_rejects(spark, batch, rejected_by_file, cfg, now, tag, sink)
    t = res.timed("rejects", t)

    # What the table now holds for these files, per file and day: the ledger's counts, the
    # batch's days, and the check that every line read landed once (table or rejects).
    accepted_by_file: dict[str, int] = {}
    for uri, date, n in file_rows(spark, tables.ACCESS_LOGS, uris):
        accepted_by_file[uri] = accepted_by_file.get(uri, 0) + n
        if date is not None:
            res.dates.add(date)
    held = sum(accepted_by_file.values())
    if cfg.verify and (held != res.accepted or added_rej != res.rejected):
        raise RuntimeError(
            f"verification failed: read {res.lines} lines; the table holds {held} rows and the "
            f"commit added {added_rej} rejects for these files, expected {res.accepted} and "
            f"{res.rejected}"
        )
    t = res.timed("verify", t)

    # A crash from here on leaves committed data without a ledger entry: the next run reads
    # the files again and replaces their rows, which changes nothing.
    print(f"committed data for {len(batch)} file(s), snapshot {res.snapshot_id}", flush=True)
    ledger_rows = []
    for f in batch:
        ok, rej = accepted_by_file.get(f.uri, 0), rejected_by_file.get(f.uri, 0)
        ledger_rows.append((f.uri, f.size, f.modified, cfg.run_id, ok + rej, ok, rej))
    spark.createDataFrame(
        ledger_rows,
        "path STRING, size BIGINT, modification_time TIMESTAMP, run_id STRING, lines BIGINT, "
        "accepted BIGINT, rejected BIGINT",
    ).withColumn("ingested_at", F.current_timestamp()).writeTo(
        qualified(spark, tables.LEDGER)
    ).append()
    res.timed("ledger", t)
    return res


def write_rejects(
    spark: SparkSession,
    batch: list[InputFile],
    rejected_by_file: dict[str, int],
    cfg: IngestConfig,
    now: Column,
    tag: str,
    sink: RejectSink | None = None,
) -> int:
    """Commit the rejected lines: the ones `sink` kept during the read, when it holds all
    of them; else the rejected lines of the files that have any, read again.

    Returns the number of rejects the commit added.
    """
    uris = [f.uri for f in batch]
    rejected = sum(rejected_by_file.values())
    if not rejected:
        old = stored_files(spark, tables.REJECTS, uris)
        if old:  # a changed file that no longer has rejects
            spark.sql(f"DELETE FROM {tables.REJECTS} WHERE source_file IN ({_sql_list(old)})")
        return 0
    kept = sink.lines() if sink is not None else None
    if kept is not None and kept[1] == rejected:
        located = kept[0]  # with their reasons: no second parse
        print(f"rejects: {rejected} line(s) kept during the parse", flush=True)
    else:
        print(f"rejects: {rejected} line(s) read again from the files", flush=True)
        located = read_parsed(spark, [u for u in uris if u in rejected_by_file])
    rejects = to_rejects(located, cfg.run_id, now)
    return replace_rows(spark, tables.REJECTS, rejects, uris, tag)[1]


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


def ingest(spark: SparkSession, cfg: IngestConfig) -> BatchResult:
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    created = tables.create_ingest_tables(spark)
    files = list_inputs(spark, cfg)
    fresh = cfg.full or tables.LEDGER in created  # nothing to look up
    todo, changed = plan(files, {} if fresh else ledger_state(spark), cfg.full)
    total = BatchResult()
    total.timed("setup", t0)
    for batch in batches(todo, cfg.max_bytes_per_commit):
        total.add(ingest_batch(spark, batch, cfg))
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
        f"snapshot={total.snapshot_id} duration={duration:.1f}s "
        f"steps={','.join(f'{k}:{v}' for k, v in total.seconds.items())}"
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
