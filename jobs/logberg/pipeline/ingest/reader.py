"""Reading log files: parsed as they are read (`dev.logberg.LogLines`), with the derived
columns if asked, and rejected lines kept on the side (`RejectSink`)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from logberg.lakehouse import sql
from logberg.lakehouse.schema import Column as TableColumn
from logberg.pipeline import jar
from logberg.pipeline.logformat import Reading
from logberg.pipeline.parse import LINES_SOURCE

# Rejected lines are kept while a batch is written, up to this many characters; beyond it
# (a batch of mostly garbage) they are read from the files again.
REJECT_BUDGET_CHARS = 32 << 20
REJECTS_SOURCE = "dev.logberg.RejectLines"  # reads back what LogLines kept
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class RejectSink:
    """Rejected lines kept while a batch is read, bounded (dev.logberg.RejectCollector).

    `read_parsed(..., sink=...)` adds every line it rejects, with its source_file and
    line_number; `lines()` then gives them as a DataFrame with their count, or None when
    they passed `budget_chars` (the caller reads them from the files again).

    Only data source options cross to the JVM (so it works over Spark Connect too): the
    sink is an id, fresh per batch; the reader's scan opens the collector of that id on the
    driver, and `lines()` reads it back through `REJECTS_SOURCE`, which releases it.
    """

    def __init__(self, spark: SparkSession, budget_chars: int | None = None) -> None:
        self._spark = spark
        self.budget = REJECT_BUDGET_CHARS if budget_chars is None else budget_chars
        self.id = uuid.uuid4().hex

    def options(self) -> dict[str, str]:
        """The reader's options that send its rejected lines here."""
        return {"rejects": self.id, "rejects_budget": str(self.budget)}

    def lines(self) -> tuple[DataFrame, int] | None:
        """(source_file, line_number, value, reject_reason, raw_bytes of each line kept,
        one row per line; their count), or None if over budget. Call it once, after the
        reads: the collector is released; the rows stay in a local checkpoint."""
        status = self._read("status").first()
        if status is None or not status.kept:
            return None
        return self._read("rows").localCheckpoint(), int(status.lines)

    def counts(self) -> dict[str, tuple[int, int, int]]:
        """source_file -> (lines, rejected, bytes) of each source a good-rows scan of this
        sink read whole (bytes: a topic's messages'; 0 for a file). Call it after the read
        and before `lines()`."""
        rows = self._read("counts").collect()
        return {r.source_file: (int(r.lines), int(r.rejected), int(r.bytes)) for r in rows}

    def _read(self, what: str) -> DataFrame:
        source = self._spark.read.format(REJECTS_SOURCE)
        return source.option("id", self.id).option("read", what).load()


def read_parsed(
    spark: SparkSession,
    uris: Sequence[str],
    sink: RejectSink | None = None,
    reading: Reading | None = None,
    derived: bool = False,
) -> DataFrame:
    """The lines of these files, parsed as they are read.

    Columns: source_file (the URI as given), line_number (1-based; empty lines are counted,
    not returned), value (the raw line of a rejected line, else NULL), then the fields of
    `parse_lines`, then a STRING column per variable of the format that logberg does not
    know. Each file is read whole by one task. Rejected lines also go to `sink`.
    `reading`: the log format and client rule (default: combined, $remote_addr).

    `derived`: the rows end with `DERIVED_COLUMNS` too (NULL on rejected lines), computed by
    the reader as `parse.enrich` and `parse.event_id` compute them; `to_access_rows` then
    takes them as they are, with no projection to compute and copy them per row.
    """
    reader = _reader(spark, uris, sink, reading)
    if derived:
        reader = reader.option("derived", "true")
    return reader.load()


def _reader(
    spark: SparkSession, uris: Sequence[str], sink: RejectSink | None, reading: Reading | None
) -> DataFrameReader:
    jar.require(spark)  # logberg's jar is on the class path, or a clear error
    reader = spark.read.format(LINES_SOURCE).option("files", "\n".join(uris))
    reader = reader.options(**(reading or Reading()).options())
    if sink is not None:
        reader = reader.options(**sink.options())
    return reader


def read_good_rows(
    spark: SparkSession,
    uris: Sequence[str],
    sink: RejectSink,
    reading: Reading | None,
    columns: Sequence[TableColumn],
    stamp: tuple[str, dt.datetime],
) -> DataFrame:
    """The good lines of these files, as rows of `columns` (a table's, in its order), for a
    write with no projection or filter in between: the reader fills each column of the same
    name from the line (`read_parsed(..., derived=True)`'s columns, the same values), the
    column `stamp[0]` with the time `stamp[1]`, and any other column with NULL.

    The rejected lines go to `sink`, which also counts every file's lines and rejects once
    the write has read it (`RejectSink.counts`)."""
    reader = _reader(spark, uris, sink, reading).option("derived", "true")
    return reader.options(**row_options(columns, stamp)).load()


def row_options(columns: Sequence[TableColumn], stamp: tuple[str, dt.datetime]) -> dict[str, str]:
    """A line reader's options (LogLines', KafkaLines') for rows of `columns`, `stamp[0]`
    holding the time `stamp[1]` (see `read_good_rows`)."""
    name, when = stamp
    micros = (when - EPOCH) // dt.timedelta(microseconds=1)
    ddl = ", ".join(
        f"{sql.identifier(c.name)} {c.type}{'' if c.nullable else ' NOT NULL'}" for c in columns
    )
    return {"columns": ddl, "stamp_column": name, "stamp_micros": str(micros)}
