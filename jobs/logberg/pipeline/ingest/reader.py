"""Reading log files: parsed as they are read (`dev.logberg.LogLines`), rejected lines kept
on the side (`RejectSink`), and the common agents sampled from the files' heads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.pipeline.ingest.plan import InputFile
from logberg.pipeline.logformat import Reading
from logberg.pipeline.parse import LINES_SOURCE, parser_return_type

# The agent lookup comes from the first SAMPLE_BYTES of up to SAMPLE_FILES files of a batch,
# read by the driver; agents it misses are classified row by row (same result).
SAMPLE_FILES = 16
SAMPLE_BYTES = 512 << 10
MAX_LOOKUP_AGENTS = 5_000
# Rejected lines are kept while a batch is written, up to this many characters; beyond it
# (a batch of mostly garbage) they are read from the files again.
REJECT_BUDGET_CHARS = 32 << 20


class RejectSink:
    """Rejected lines kept while a batch is read (dev.logberg.RejectCollector), bounded.

    `read_parsed(..., sink=...)` adds every line it rejects, with its source_file and
    line_number; `lines()` then gives them as a DataFrame with their count, or None when
    they passed `budget_chars` (the caller reads them from the files again).
    """

    VIEW = "logberg_batch_rejects"

    def __init__(self, spark: SparkSession, budget_chars: int | None = None) -> None:
        self._spark = spark
        jvm: Any = spark.sparkContext._jvm  # py4j: untyped
        budget = REJECT_BUDGET_CHARS if budget_chars is None else budget_chars
        self._jvm = jvm.dev.logberg.RejectCollector(budget)
        self.id = str(self._jvm.register(spark._jsparkSession))

    def lines(self) -> tuple[DataFrame, int] | None:
        """(source_file, line_number, value, reject_reason of each line kept; their count),
        or None if over budget."""
        if self._jvm.overflowed():
            return None
        n = int(self._jvm.publish(self._spark._jsparkSession, self.VIEW))
        return self._spark.table(self.VIEW), n


def read_parsed(
    spark: SparkSession,
    uris: Sequence[str],
    sink: RejectSink | None = None,
    reading: Reading | None = None,
) -> DataFrame:
    """The lines of these files, parsed as they are read.

    Columns: source_file (the URI as given), line_number (1-based; empty lines are counted,
    not returned), value (the raw line of a rejected line, else NULL), then the fields of
    `parse_lines`, then a STRING column per variable of the format that logberg does not
    know. Each file is read whole by one task. Rejected lines also go to `sink`.
    `reading`: the log format and client rule (default: combined, $remote_addr).
    """
    parser_return_type(spark)  # logberg's jar is on the class path, or a clear error
    reader = spark.read.format(LINES_SOURCE).option("files", "\n".join(uris))
    reader = reader.options(**(reading or Reading()).options())
    if sink is not None:
        reader = reader.option("rejects", sink.id)
    return reader.load()


def file_index(uris: Sequence[str]) -> Column:
    """The row's source_file as its 1-based index in `uris` (an INT, not the URI)."""
    return F.array_position(F.array(*[F.lit(u) for u in uris]), F.col("source_file"))


def head_bytes(spark: SparkSession, uri: str, n: int) -> bytes:
    """Up to `n` bytes from the start of a file (decompressed for .gz), via Hadoop's FS."""
    jvm: Any = spark.sparkContext._jvm  # py4j: untyped
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri))  # uri is encoded
    stream = path.getFileSystem(conf).open(path)
    try:
        codec = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(conf).getCodec(path)
        source = codec.createInputStream(stream) if codec is not None else stream
        return bytes(source.readNBytes(n))
    finally:
        stream.close()


def sample_agents(spark: SparkSession, files: Sequence[InputFile]) -> list[str]:
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
