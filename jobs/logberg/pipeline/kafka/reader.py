"""Reading a batch's offset ranges of a topic of raw lines, parsed as they are read
(`dev.logberg.KafkaLines`: the Kafka twin of the file reader, `ingest.reader`), the
messages that are not lines and the rejected lines kept on the side (`RejectSink`).

A batch is read in at least `read_partitions` tasks: when it has fewer partitions than
that, each partition's range is read in consecutive pieces, each by its own consumer (a
one-partition topic is parsed on every core). The pieces change the read only: the rows,
their lineage, the counts per partition and the offsets committed are the same."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from logberg.lakehouse.schema import Column as TableColumn
from logberg.pipeline import jar
from logberg.pipeline.ingest.reader import RejectSink, row_options
from logberg.pipeline.kafka.config import KafkaIngestConfig

KAFKA_LINES_SOURCE = "dev.logberg.KafkaLines"
LOCAL_MASTER = re.compile(r"^local\[(\d+|\*)")


def source_file(topic: str, partition: int) -> str:
    """A raw message's source_file (`messages.coordinates`)."""
    return f"kafka://{topic}/{partition}"


CORE_SETTINGS = (
    "spark.master",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.default.parallelism",
)


def spark_cores(spark: SparkSession) -> int:
    """The cores Spark runs a session's tasks on, from its settings (so it holds over Spark
    Connect too): `cores_from`."""
    return cores_from({k: v for k in CORE_SETTINGS if (v := spark.conf.get(k, None))})


def cores_from(conf: Mapping[str, str]) -> int:
    """local[N]'s N (local[*]: this machine's); else spark.executor.instances x
    spark.executor.cores; else spark.default.parallelism; else 2. The cores, not the
    default parallelism (4 on a local 2-core session): a one-partition topic of 5M lines
    read in 2 pieces on 2 cores took 21.8 s, in 4 pieces 24.2-25.0 s (bench/README.md)."""

    def get(key: str) -> str | None:
        v = conf.get(key)
        return v.strip() if v and v.strip() else None

    local = LOCAL_MASTER.match(get("spark.master") or "")
    if local:
        n = local.group(1)
        return (os.cpu_count() or 1) if n == "*" else max(1, int(n))
    instances, cores = get("spark.executor.instances"), get("spark.executor.cores") or "1"
    if instances and instances.isdigit() and cores.isdigit():
        return max(1, int(instances) * int(cores))
    parallelism = get("spark.default.parallelism")
    if parallelism is not None and parallelism.isdigit() and int(parallelism) > 0:
        return int(parallelism)
    return 2


def read_partitions(spark: SparkSession, cfg: KafkaIngestConfig) -> int:
    """The fewest tasks a batch's ranges are read in (KafkaLines' `min_partitions`):
    --min-partitions, else the session's cores (`spark_cores`). Decided once per batch, so
    a retried write reads the same pieces."""
    return cfg.min_partitions if cfg.min_partitions is not None else spark_cores(spark)


def _reader(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    sink: RejectSink | None,
    partitions: int,
) -> DataFrameReader:
    jar.require(spark)
    text = "\n".join(
        f"{cfg.source.topic}\t{p}\t{lo}\t{until}" for p, (lo, until) in sorted(ranges.items())
    )
    reader = (
        spark.read.format(KAFKA_LINES_SOURCE)
        .option("bootstrap", cfg.source.bootstrap)
        .option("ranges", text)
        .option("max_line_bytes", str(cfg.max_line_bytes))
        .option("min_partitions", str(partitions))
        .options(**cfg.source.options.jvm())  # kafka.KEY: the consumers' own (security)
    )
    if cfg.min_split_messages is not None:
        reader = reader.option("min_split_messages", str(cfg.min_split_messages))
    return reader.options(**sink.options()) if sink is not None else reader


def read_messages(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    partitions: int = 1,
) -> DataFrame:
    """Every message of the ranges, parsed: the columns of `ingest.reader.read_parsed`, a
    message that is not a line with its text, bytes and reason (`messages.BadMessage`).
    `partitions`: the fewest tasks to read them in (`read_partitions`)."""
    return _reader(spark, cfg, ranges, None, partitions).load()


def read_good_rows(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    sink: RejectSink,
    columns: Sequence[TableColumn],
    stamp: tuple[str, dt.datetime],
    partitions: int = 1,
) -> DataFrame:
    """The good lines of the ranges as rows of `columns` (`ingest.reader.read_good_rows`);
    the rest go to `sink`, which counts each partition's messages and rejects (a range
    read in pieces: their sum, once every piece is read). `partitions`: as in
    `read_messages`."""
    reader = _reader(spark, cfg, ranges, sink, partitions).option("derived", "true")
    return reader.options(**row_options(columns, stamp)).load()
