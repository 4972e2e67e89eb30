"""What `logberg kafka topics create` and `local up --topic` check before any broker is
asked: the topic's name by Kafka's rule, the partitions, the replication factor, the
`--config` pairs, `NAME[:PARTITIONS]`. The calls to a broker are
tests/integration/test_kafka_shippers.py's."""

from __future__ import annotations

import pytest

from logberg.cli import build_parser
from logberg.cli.kafka import brokers
from logberg.errors import ConfigError
from logberg.lakehouse.kafka_admin import TopicSpec, parse_configs, parse_spec


@pytest.mark.parametrize("name", ["nginx", "a.b_c-9", "x" * 249])
def test_a_name_kafka_takes_is_taken(name: str) -> None:
    assert TopicSpec(name).name == name


@pytest.mark.parametrize("name", ["", ".", "..", "bad name", "a/b", "ü", "x" * 250])
def test_a_name_kafka_refuses_is_named(name: str) -> None:
    with pytest.raises(ConfigError, match="not a topic name Kafka takes"):
        TopicSpec(name)


def test_partitions_and_replicas_are_at_least_one() -> None:
    with pytest.raises(ConfigError, match="--partitions 0"):
        TopicSpec("t", partitions=0)
    with pytest.raises(ConfigError, match="--replication-factor -1"):
        TopicSpec("t", replication_factor=-1)


def test_configs_are_key_value_pairs_the_last_of_a_key_wins() -> None:
    assert parse_configs(["retention.ms=1", "cleanup.policy=delete", "retention.ms=2"]) == (
        ("cleanup.policy", "delete"),
        ("retention.ms", "2"),
    )
    for bad in ("retention.ms", "=1", "retention.ms="):
        with pytest.raises(ConfigError, match=f"--config {bad!r}: expected KEY=VALUE"):
            parse_configs([bad])


def test_a_local_topic_is_a_name_and_maybe_its_partitions() -> None:
    assert parse_spec("nginx", "--topic") == TopicSpec("nginx", setting="--topic")
    assert parse_spec("nginx:4", "--topic").partitions == 4
    with pytest.raises(ConfigError, match=r"--topic 'nginx:x': expected NAME\[:PARTITIONS\]"):
        parse_spec("nginx:x", "--topic")
    with pytest.raises(ConfigError, match="--topic 'nginx:0': a topic needs at least one"):
        parse_spec("nginx:0", "--topic")
    with pytest.raises(ConfigError, match="--topic 'a b'"):
        parse_spec("a b", "--topic")


def test_bootstrap_is_checked_and_the_options_come_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LOGBERG_KAFKA_OPTIONS", raising=False)
    parse = build_parser().parse_args
    a = parse(["kafka", "topics", "list", "--bootstrap", "k1:9092,k2:9092",
               "--kafka-option", "security.protocol=SSL"])  # fmt: skip
    t = brokers(a)
    assert (t.bootstrap, t.setting) == ("k1:9092,k2:9092", "--bootstrap")
    assert dict(t.options.items) == {"security.protocol": "SSL"}
    for bad in ("kafka://k1:9092/t", "k1"):
        with pytest.raises(ConfigError, match="--bootstrap"):
            brokers(parse(["kafka", "topics", "list", "--bootstrap", bad]))
    monkeypatch.setenv("LOGBERG_KAFKA_BOOTSTRAP", "env-broker:9092")
    t = brokers(parse(["kafka", "topics", "describe", "nginx"]), "nginx")
    assert (t.bootstrap, t.topic, t.setting) == (
        "env-broker:9092",
        "nginx",
        "LOGBERG_KAFKA_BOOTSTRAP",
    )
