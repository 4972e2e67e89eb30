"""The offsets of a topic in Structured Streaming's offset log, as Spark writes its files."""

from __future__ import annotations

import pytest

from logberg.errors import ServiceError
from logberg.pipeline.kafka.offset_log import offsets

# offsets/N: a version line, the batch's metadata, then one line per source.
BATCH = (
    "v1\n"
    '{"batchWatermarkMs":0,"batchTimestampMs":1764470000000,"conf":'
    '{"spark.sql.shuffle.partitions":"2"}}\n'
    '{"logs":{"2":1500,"1":1498,"3":1502,"0":1500}}'
)
# sources/0/0: the resolved starting offsets, after a version line.
INITIAL = 'v1\n{"logs":{"0":0,"1":0,"2":7,"3":0}}'


def test_a_batchs_end_offsets_per_partition() -> None:
    assert offsets(BATCH, "logs") == {0: 1500, 1: 1498, 2: 1500, 3: 1502}


def test_the_starting_offsets_file() -> None:
    assert offsets(INITIAL, "logs") == {0: 0, 1: 0, 2: 7, 3: 0}


def test_a_topic_the_log_does_not_hold_is_an_error() -> None:
    with pytest.raises(ServiceError, match="no offsets of topic 'other'"):
        offsets(BATCH, "other")
    with pytest.raises(ServiceError):
        offsets("v1\nnot json\n", "logs")


# -- a stream's position (logberg.pipeline.kafka.position) ----------------------------------
def test_the_last_committed_batch_is_the_greatest_commit_file() -> None:
    from logberg.pipeline.kafka.position import last_batch

    assert last_batch(["0", "1", ".1.crc", "10", "2", "_tmp"]) == 10
    assert last_batch([".0.crc"]) is None and last_batch([]) is None


def test_behind_counts_what_the_topic_holds_past_the_commit() -> None:
    from logberg.pipeline.kafka.position import behind

    assert behind({0: 10, 1: 5}, {0: 10, 1: 7}) == 2
    assert behind({}, {0: 3, 1: 2}) == 5  # no batch yet: all of it
    assert behind({0: 12}, {0: 10}) == 0  # a topic made again, shorter: never negative
