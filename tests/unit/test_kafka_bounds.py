"""`within_sources`: the condition a Kafka batch's MERGE puts on the table's side, so that
Iceberg reads only the data files whose bounds overlap the batch's sources and lines."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from logberg.pipeline.kafka.job import MAX_BOUNDED_SOURCES, within_sources

ROWS = "source_file STRING, line_number BIGINT"


def test_only_rows_of_the_batchs_sources_and_ranges_meet_it(spark: SparkSession) -> None:
    table = spark.createDataFrame(
        [("kafka://t/0", 9), ("kafka://t/0", 10), ("kafka://t/0", 20), ("kafka://t/0", 21),
         ("kafka://t/1", 15), ("web-1:/a.log", 3), ("web-1:/b.log", 3), (None, 10)],
        ROWS,
    ).alias("t")  # fmt: skip
    cond = within_sources("t", {"kafka://t/0": (10, 20), "web-1:/a.log": (1, 3)})
    assert cond is not None
    want = spark.createDataFrame(
        [("kafka://t/0", 10), ("kafka://t/0", 20), ("web-1:/a.log", 3)], ROWS
    )
    assertDataFrameEqual(table.where(cond), want)


def test_no_sources_or_too_many_give_no_condition() -> None:
    assert within_sources("t", {}) is None
    many = {f"web-{i}:/a.log": (0, 1) for i in range(MAX_BOUNDED_SOURCES + 1)}
    assert within_sources("t", many) is None
