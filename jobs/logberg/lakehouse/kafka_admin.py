"""A topic's life: make it as asked (or find it made so), list the topics, describe one
(`logberg kafka topics`, `logberg local up --kafka --topic`).

Everything is checked before a CreateTopics request goes out: the name by Kafka's own rule,
the partitions (at least one), the replication factor (at most the brokers the cluster's
metadata names). A topic that exists already is a success when it has what was asked (the
partitions, the replication factor, each `--config` value) and a ConfigError naming every
difference when not. What was not asked (no `--partitions`: the broker's `num.partitions`)
is the broker's default when made and not compared when found.

The calls go through the same client options as ingest (`kafka.TopicUri.options`), so they
sign in to Amazon MSK with IAM as ingest does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError
from logberg.lakehouse.kafka import TOPIC, TopicUri, _admin, _conf, _metadata

if TYPE_CHECKING:
    from collections.abc import Sequence

CONFIG_FLAG = "--config"


@dataclass(frozen=True)
class TopicSpec:
    """What a topic is asked to be; None: the broker's default (not compared)."""

    name: str
    partitions: int | None = None
    replication_factor: int | None = None
    configs: tuple[tuple[str, str], ...] = ()
    setting: str = "topic"  # what named the topic, for messages

    def __post_init__(self) -> None:
        check_name(self.name, self.setting)
        if self.partitions is not None and self.partitions < 1:
            raise ConfigError(f"--partitions {self.partitions}: a topic needs at least one")
        if self.replication_factor is not None and self.replication_factor < 1:
            raise ConfigError(
                f"--replication-factor {self.replication_factor}: at least one replica"
            )


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    in_sync: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    """A topic as the cluster's metadata has it."""

    name: str
    partitions: tuple[PartitionInfo, ...]

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


def check_name(name: str, setting: str = "topic") -> None:
    """Kafka's rule for a topic's name (kafka.common.internals.Topic.validate)."""
    if name in (".", "..") or not TOPIC.match(name):
        raise ConfigError(
            f"{setting} {name!r}: not a topic name Kafka takes (1 to 249 of a-z A-Z 0-9 . _ -, "
            "and not '.' or '..')"
        )


def parse_configs(flags: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`--config KEY=VALUE`, repeatable; a later key replaces an earlier one."""
    found: dict[str, str] = {}
    for flag in flags:
        key, sep, value = flag.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{CONFIG_FLAG} {flag!r}: expected KEY=VALUE (e.g. retention.ms=…)")
        found[key.strip()] = value.strip()
    return tuple(sorted(found.items()))


def parse_spec(raw: str, setting: str) -> TopicSpec:
    """`NAME[:PARTITIONS]` (`local up --topic`): a topic name holds no ':'."""
    name, sep, count = raw.strip().partition(":")
    if sep and not count.strip().isdigit():
        raise ConfigError(f"{setting} {raw!r}: expected NAME[:PARTITIONS]")
    partitions = int(count) if sep else None
    if partitions is not None and partitions < 1:
        raise ConfigError(f"{setting} {raw!r}: a topic needs at least one partition")
    return TopicSpec(name, partitions, setting=setting)


def _info(name: str, md: Any) -> TopicInfo:
    return TopicInfo(
        name,
        tuple(
            PartitionInfo(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in sorted(md.partitions.values(), key=lambda p: p.id)
        ),
    )


def topics(t: TopicUri, timeout: float = 10.0) -> list[TopicInfo]:
    """Every topic but Kafka's internal ones (`__consumer_offsets`, ...), by name."""
    md = _metadata(t, timeout)
    return [
        _info(name, found)
        for name, found in sorted(md.topics.items())
        if not name.startswith("__") and found.error is None
    ]


def describe(t: TopicUri, timeout: float = 10.0) -> TopicInfo:
    """The topic's partitions (leader, replicas, in-sync replicas); a topic the cluster
    does not have is a ConfigError naming it."""
    md = _metadata(t, timeout, t.topic)
    found = md.topics.get(t.topic)
    if found is None or found.error is not None or not found.partitions:
        raise ConfigError(f"{t.setting} {t.bootstrap}: the broker has no topic {t.topic!r}")
    return _info(t.topic, found)


def _configs(t: TopicUri, timeout: float) -> dict[str, str | None]:
    """The topic's configuration as the broker has it (defaults included)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigResource, ResourceType

    admin = _admin(t.bootstrap, _conf(t))
    resource = ConfigResource(ResourceType.TOPIC, t.topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout
        )
    except KafkaException as e:
        raise ConfigError(
            f"{t.setting} {t.uri}: cannot read the topic's configuration ({e.args[0].str()})"
        ) from None
    return {name: entry.value for name, entry in entries.items()}


def differences(t: TopicUri, spec: TopicSpec, found: TopicInfo, timeout: float) -> list[str]:
    """What the existing topic has other than asked, one phrase each."""
    out = []
    if spec.partitions is not None and len(found.partitions) != spec.partitions:
        out.append(f"{len(found.partitions)} partition(s), not {spec.partitions}")
    if spec.replication_factor is not None and found.replication_factor != spec.replication_factor:
        out.append(f"replication factor {found.replication_factor}, not {spec.replication_factor}")
    if spec.configs:
        has = _configs(t, timeout)
        for key, value in spec.configs:
            if key not in has:
                out.append(f"{CONFIG_FLAG} {key}: the broker knows no such topic config")
            elif has[key] != value:
                out.append(f"{key}={has[key]}, not {value}")
    return out


def ensure(t: TopicUri, spec: TopicSpec, timeout: float = 30.0) -> tuple[bool, TopicInfo]:
    """Make the topic `spec` asks for at `t.bootstrap` unless it exists as asked; (made now,
    the topic). An existing topic that differs, a replication factor above the brokers'
    count, or a request the broker refuses is a ConfigError naming it."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    t = replace(t, topic=spec.name)
    md = _metadata(t, timeout)
    existing = md.topics.get(spec.name)
    if existing is None or existing.error is not None:
        brokers = len(md.brokers)
        if spec.replication_factor is not None and spec.replication_factor > brokers:
            raise ConfigError(
                f"--replication-factor {spec.replication_factor}: the cluster at "
                f"{t.bootstrap} has {brokers} broker(s)"
            )
        new = NewTopic(
            spec.name,
            num_partitions=-1 if spec.partitions is None else spec.partitions,
            replication_factor=-1 if spec.replication_factor is None else spec.replication_factor,
            config=dict(spec.configs),
        )
        # Held until the result: a dropped client ends its requests.
        admin = _admin(t.bootstrap, _conf(t))
        try:
            admin.create_topics([new], operation_timeout=timeout)[spec.name].result(timeout)
            return True, _made(t, timeout)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # else: made meanwhile
                raise ConfigError(
                    f"{spec.setting} {spec.name!r}: the broker at {t.bootstrap} does not "
                    f"make the topic ({e.args[0].str()})"
                ) from None
    found = describe(t, timeout)
    wrong = differences(t, spec, found, timeout)
    if wrong:
        raise ConfigError(
            f"{spec.setting} {spec.name!r} exists at {t.bootstrap} with other settings than "
            f"asked: {'; '.join(wrong)}"
        )
    return False, found


def _made(t: TopicUri, timeout: float) -> TopicInfo:
    """The topic just made, once the metadata a broker serves has its partitions."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            return describe(t, timeout)
        except ConfigError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
