"""A Kafka micro-batch's push to a real Pushgateway: the lag series the lag alert reads
survives a batch whose lag could not be measured."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from logberg.pipeline import metrics
from logberg.pipeline.kafka.job import KafkaBatchResult
from tests.helpers.prometheus import pushgateway

pytestmark = [pytest.mark.integration]

AT = '{instance="",job="logberg_kafka_ingest",partition="0",topic="t1"}'


def series(url: str, name: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sorted(ln for ln in text.splitlines() if ln.startswith(name + "{"))


def test_a_batch_without_a_lag_keeps_the_last_measured_lag(tmp_path: Path) -> None:
    with pushgateway(tmp_path) as url:
        first = KafkaBatchResult("r1", 1, messages=7, accepted=7, offsets={0: (0, 7)}, lag={0: 5})
        metrics.push_kafka(url, "t1", first)
        lag = series(url, "logberg_kafka_consumer_lag")
        assert lag == [f"logberg_kafka_consumer_lag{AT} 5"]
        # The broker away when the next batch measured its lag: no lag in its result.
        second = KafkaBatchResult("r1", 2, messages=3, accepted=3, offsets={0: (7, 10)})
        metrics.push_kafka(url, "t1", second)
        assert series(url, "logberg_kafka_consumer_lag") == lag
        assert series(url, "logberg_kafka_committed_offset") == [
            f"logberg_kafka_committed_offset{AT} 10"
        ]
        # A measured lag replaces the whole group again.
        third = KafkaBatchResult("r1", 3, messages=2, accepted=2, offsets={0: (10, 12)}, lag={0: 0})
        metrics.push_kafka(url, "t1", third)
        assert series(url, "logberg_kafka_consumer_lag") == [f"logberg_kafka_consumer_lag{AT} 0"]
