"""Kafka records -> the lines ingest parses (`logberg.pipeline.kafka.messages`): lineage,
source identity, and every kind of message that is not a line."""

from __future__ import annotations

import json
import os

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from logberg.errors import ConfigError
from logberg.lakehouse.kafka import TopicUri
from logberg.pipeline.kafka.config import KafkaIngestConfig, ValueFormat
from logberg.pipeline.kafka.messages import lines

RECORDS = "topic STRING, partition INT, offset BIGINT, value BINARY"
OUT = (
    "partition INT, offset BIGINT, source_file STRING, line_number BIGINT, value STRING, "
    "raw_bytes BINARY, bad STRING"
)
LINE = b'10.0.0.1 - - [06/Jan/2025:10:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"'


def records(spark: SparkSession, *rows: tuple[int, int, bytes | None]) -> DataFrame:
    return spark.createDataFrame(
        [("logs", p, o, bytearray(v) if v is not None else None) for p, o, v in rows], RECORDS
    )


def test_a_raw_message_is_its_line_at_its_partition_and_offset(spark: SparkSession) -> None:
    # One line end (\n or \r\n) is not the line's; only one is taken off.
    ends = (b"", b"\n", b"\r\n", b"\n\n", b"\r")
    got = lines(
        records(spark, *((p, 7, LINE + end) for p, end in enumerate(ends))), ValueFormat(), 1 << 20
    )
    kept = ("", "", "", "\n", "\r")
    want = spark.createDataFrame(
        [(p, 7, f"kafka://logs/{p}", 7, LINE.decode() + k, None, None) for p, k in enumerate(kept)],
        OUT,
    )
    assertDataFrameEqual(got, want)


def test_messages_that_are_not_lines_keep_their_bytes_and_say_why(spark: SparkSession) -> None:
    bad_utf8 = b"10.0.0.1 \xff\xfe"
    got = lines(
        records(spark, (0, 1, None), (0, 2, b""), (0, 3, b"x" * 21), (0, 4, bad_utf8)),
        ValueFormat(),
        20,
    )
    want = spark.createDataFrame(
        [
            (0, 1, "kafka://logs/0", 1, None, None, "tombstone"),
            (0, 2, "kafka://logs/0", 2, "", bytearray(b""), "empty"),
            (0, 3, "kafka://logs/0", 3, "x" * 21, bytearray(b"x" * 21), "too_long"),
            (0, 4, "kafka://logs/0", 4, "10.0.0.1 \ufffd\ufffd", bytearray(bad_utf8), "not_utf8"),
        ],
        OUT,
    )
    assertDataFrameEqual(got, want)


def test_an_envelope_gives_the_line_and_the_shippers_identity(spark: SparkSession) -> None:
    full = json.dumps({"log": LINE.decode(), "host": "web-1", "file": "/a.log", "offset": 42})
    anonymous = json.dumps({"log": LINE.decode()})
    got = lines(
        records(
            spark,
            (0, 5, full.encode()),
            (0, 6, full.encode()),  # the shipper sent it again: the same identity
            (1, 9, anonymous.encode()),
            (1, 10, b'{"message": "no log field"}'),
            (1, 11, b"not json"),
        ),
        ValueFormat("log"),
        1 << 20,
    )
    want = spark.createDataFrame(
        [
            (0, 5, "web-1:/a.log", 42, LINE.decode(), None, None),
            (0, 6, "web-1:/a.log", 42, LINE.decode(), None, None),
            (1, 9, "kafka://logs/1", 9, LINE.decode(), None, None),
            (
                1,
                10,
                "kafka://logs/1",
                10,
                '{"message": "no log field"}',
                bytearray(b'{"message": "no log field"}'),
                "no_field",
            ),
            (1, 11, "kafka://logs/1", 11, "not json", bytearray(b"not json"), "no_field"),
        ],
        OUT,
    )
    assertDataFrameEqual(got, want)


@pytest.mark.parametrize("raw", ["json", "json:", "xml:log", "json:a b"])
def test_a_wrong_value_format_names_the_option(raw: str) -> None:
    with pytest.raises(ConfigError, match="--value"):
        ValueFormat.parse(raw)


def test_a_batch_holds_more_raw_lines_than_envelopes_unless_told() -> None:
    """Raw lines stream into the table's rows; envelopes are held while decoded."""
    topic = TopicUri("127.0.0.1:9092", "logs", "g")
    raw = KafkaIngestConfig(topic)
    envelopes = KafkaIngestConfig(topic, value=ValueFormat("log"))
    assert raw.messages_per_trigger > envelopes.messages_per_trigger
    told = KafkaIngestConfig(topic, value=ValueFormat("log"), max_messages_per_trigger=400)
    assert told.messages_per_trigger == 400
    with pytest.raises(ConfigError, match="--max-messages-per-trigger"):
        KafkaIngestConfig(topic, max_messages_per_trigger=0)


def test_a_read_split_below_one_task_or_message_names_the_setting() -> None:
    topic = TopicUri("127.0.0.1:9092", "logs", "g")
    assert KafkaIngestConfig(topic, min_partitions=1).min_partitions == 1
    with pytest.raises(ConfigError, match="--min-partitions 0"):
        KafkaIngestConfig(topic, min_partitions=0)
    with pytest.raises(ConfigError, match="min_split_messages 0"):
        KafkaIngestConfig(topic, min_split_messages=0)


def test_a_split_read_uses_the_cores_not_the_default_parallelism() -> None:
    from logberg.pipeline.kafka.reader import cores_from

    local = {"spark.master": "local[2]", "spark.default.parallelism": "4"}
    assert cores_from(local) == 2
    assert cores_from({"spark.master": "local[*]"}) == (os.cpu_count() or 1)
    executors = {"spark.master": "k8s://https://kubernetes.default.svc"}
    assert (
        cores_from({**executors, "spark.executor.instances": "3", "spark.executor.cores": "2"}) == 6
    )
    assert cores_from({**executors, "spark.executor.instances": "3"}) == 3
    assert cores_from({**executors, "spark.default.parallelism": "8"}) == 8
    assert cores_from({}) == 2
