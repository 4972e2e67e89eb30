"""Reading log files: parsed as they are read (`dev.logberg.LogLines`), with the derived
columns if asked, and rejected lines kept on the side (`RejectSink`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.pipeline.logformat import Reading
from logberg.pipeline.parse import LINES_SOURCE, parser_return_type

# Rejected lines are kept while a batch is written, up to this many characters; beyond it
# (a batch of mostly garbage) they are read from the files again.
REJECT_BUDGET_CHARS = 32 << 20
REJECTS_SOURCE = "dev.logberg.RejectLines"  # reads back what LogLines kept


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
    parser_return_type(spark)  # logberg's jar is on the class path, or a clear error
    reader = spark.read.format(LINES_SOURCE).option("files", "\n".join(uris))
    reader = reader.options(**(reading or Reading()).options())
    if sink is not None:
        reader = reader.options(**sink.options())
    if derived:
        reader = reader.option("derived", "true")
    return reader.load()


def file_index(uris: Sequence[str]) -> Column:
    """The row's source_file as its 1-based index in `uris` (an INT, not the URI)."""
    return F.array_position(F.array(*[F.lit(u) for u in uris]), F.col("source_file"))
