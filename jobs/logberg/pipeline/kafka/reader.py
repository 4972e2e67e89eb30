"""Reading a batch's offset ranges of a topic of raw lines, parsed as they are read
(`dev.logberg.KafkaLines`: the Kafka twin of the file reader, `ingest.reader`), the
messages that are not lines and the rejected lines kept on the side (`RejectSink`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from logberg.lakehouse.schema import Column as TableColumn
from logberg.pipeline import jar
from logberg.pipeline.ingest.reader import RejectSink, row_options
from logberg.pipeline.kafka.config import KafkaIngestConfig

KAFKA_LINES_SOURCE = "dev.logberg.KafkaLines"


def source_file(topic: str, partition: int) -> str:
    """A raw message's source_file (`messages.coordinates`)."""
    return f"kafka://{topic}/{partition}"


def _reader(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    sink: RejectSink | None,
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
        .options(**cfg.source.options.jvm())  # kafka.KEY: the consumers' own (security)
    )
    return reader.options(**sink.options()) if sink is not None else reader


def read_messages(
    spark: SparkSession, cfg: KafkaIngestConfig, ranges: dict[int, tuple[int, int]]
) -> DataFrame:
    """Every message of the ranges, parsed: the columns of `ingest.reader.read_parsed`, a
    message that is not a line with its text, bytes and reason (`messages.BadMessage`)."""
    return _reader(spark, cfg, ranges, None).load()


def read_good_rows(
    spark: SparkSession,
    cfg: KafkaIngestConfig,
    ranges: dict[int, tuple[int, int]],
    sink: RejectSink,
    columns: Sequence[TableColumn],
    stamp: tuple[str, dt.datetime],
) -> DataFrame:
    """The good lines of the ranges as rows of `columns` (`ingest.reader.read_good_rows`);
    the rest go to `sink`, which counts each partition's messages and rejects."""
    reader = _reader(spark, cfg, ranges, sink).option("derived", "true")
    return reader.options(**row_options(columns, stamp)).load()
