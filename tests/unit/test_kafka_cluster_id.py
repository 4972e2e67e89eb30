"""A home's Kafka cluster id: drawn without a leading '-', which Kafka's tools read as an option."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from logberg_platform import kafka_broker
from logberg_platform.local_settings import LocalSettings, MetastoreDb


def test_an_id_that_would_start_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 puts 62 (the URL-safe alphabet's '-') in the first six bits.
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x04" + bytes(15))])
    monkeypatch.setattr(kafka_broker.uuid, "uuid4", lambda: next(draws))
    assert kafka_broker.new_cluster_id() == "BAAAAAAAAAAAAAAAAAAAAA"


def test_a_homes_id_is_made_once(tmp_path: Path) -> None:
    s = LocalSettings(tmp_path, tmp_path / "tools", 9083, MetastoreDb("derby"), 9878)
    first = kafka_broker.cluster_id(s)
    assert len(first) == 22 and not first.startswith("-")
    assert kafka_broker.cluster_id(s) == first
