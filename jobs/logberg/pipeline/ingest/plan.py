"""Which files an ingest reads: the landing's listing against the file ledger, in batches."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse import sql
from logberg.lakehouse.connect import query
from logberg.lakehouse.schema import LEDGER
from logberg.pipeline import jar

DT_RE = re.compile(r"/dt=(\d{4}-\d{2}-\d{2})/")
MANIFESTS = "/_manifests/"  # the generator's ground truth, next to the logs
FILE_URI = "dev.logberg.FileUri"  # of(path): Hadoop's new Path(path).toUri().toString()


@dataclass(frozen=True)
class InputFile:
    uri: str  # the encoded URI (Hadoop's Path.toUri, by FILE_URI): the rows' source_file
    size: int
    modified: dt.datetime


@dataclass(frozen=True)
class LedgerEntry:
    size: int
    modified: dt.datetime
    run_id: str


def wanted(uri: str, since: dt.date | None) -> bool:
    """A log file (not a manifest), under dt=DATE >= since when the path names a day."""
    if MANIFESTS in uri:
        return False
    m = DT_RE.search(uri)
    return not (since and m and dt.date.fromisoformat(m.group(1)) < since)


def list_inputs(
    spark: SparkSession, inputs: Sequence[str], since: dt.date | None
) -> list[InputFile]:
    """Every .log/.gz file below the landing prefixes, sorted by URI."""
    from pyspark.errors import AnalysisException

    try:
        listing = (
            spark.read.format("binaryFile")
            .option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.{log,gz}")
            .load(list(inputs))
            .select(
                "path",
                F.reflect(F.lit(FILE_URI), F.lit("of"), F.col("path")).alias("uri"),
                "length",
                "modificationTime",
            )
            .collect()
        )
    except AnalysisException as e:
        if FILE_URI in str(e):  # the listing is also the check that logberg's jar is there
            raise jar.missing(FILE_URI) from None
        raise ConfigError(f"--input {list(inputs)}: {str(e).splitlines()[0]}") from None
    jar.found(spark)
    files = [
        InputFile(str(r.uri), int(r.length), r.modificationTime)
        for r in listing
        if wanted(r.path, since)
    ]
    return sorted(files, key=lambda f: f.uri)


def ledger_state(spark: SparkSession, uris: Sequence[str] | None = None) -> dict[str, LedgerEntry]:
    """Each file's latest ledger entry (of these files only, when given)."""
    where = f"WHERE path IN ({sql.literals(uris)})" if uris else ""
    rows = query(
        spark,
        f"SELECT path, size, modification_time, run_id FROM (SELECT *, row_number() OVER "
        f"(PARTITION BY path ORDER BY ingested_at DESC) AS rn FROM {LEDGER} {where}) "
        "WHERE rn = 1",
    ).collect()
    return {r.path: LedgerEntry(int(r.size), r.modification_time, str(r.run_id)) for r in rows}


def plan(
    files: Sequence[InputFile],
    seen: dict[str, LedgerEntry],
    full: bool = False,
    run_id: str | None = None,
) -> tuple[list[InputFile], list[InputFile]]:
    """(to read, of which changed since their last ingest).

    A file is read when it is new, when `full`, when its size or modification time changed,
    or when the ledger says this same run (`run_id`, a replayed stream batch) ingested it.
    """
    todo, changed = [], []
    for f in files:
        prev = seen.get(f.uri)
        if prev is None or full or prev.run_id == run_id:
            todo.append(f)
        elif (prev.size, prev.modified) != (f.size, f.modified):
            todo.append(f)
            changed.append(f)
    return todo, changed


@dataclass(frozen=True)
class Waiting:
    """What an ingest would read now: of `listed` files, `files` (new, or changed since
    their last ingest; `changed` of those)."""

    listed: int
    files: list[InputFile]
    changed: list[InputFile]


def pending(
    spark: SparkSession,
    inputs: Sequence[str],
    since: dt.date | None,
    ledger: bool = True,
    full: bool = False,
) -> Waiting:
    """The files under `inputs` that an ingest would read now, by a fresh listing against
    the ledger: what has landed and waits. `ledger`: False when the ledger table does not
    exist yet (every file waits)."""
    files = list_inputs(spark, inputs, since)
    if not files:
        return Waiting(0, [], [])
    todo, changed = plan(files, ledger_state(spark) if ledger else {}, full)
    return Waiting(len(files), todo, changed)


def batches(files: Sequence[InputFile], max_bytes: int) -> list[list[InputFile]]:
    """Consecutive groups of at most `max_bytes` input bytes (a bigger file alone)."""
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
