"""A Kafka topic as an input: its URI, and the client calls that check it before Spark
starts and measure how far behind a stream is (confluent-kafka, librdkafka's client).

`kafka://HOST:PORT[,HOST:PORT...]/TOPIC`. An empty host list means LOGBERG_KAFKA_BOOTSTRAP,
else the local broker (`logberg local up --kafka`) when the caller knows one; an empty
topic means LOGBERG_KAFKA_TOPIC. A broker that does not answer, or a topic it does not
have, is a ConfigError naming the setting. The clients' own options (security: Amazon
MSK's IAM sign-in) travel with the topic (`kafka_options`, LOGBERG_KAFKA_OPTIONS).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logberg.errors import ConfigError
from logberg.lakehouse.kafka_options import ClientOptions

if TYPE_CHECKING:
    from collections.abc import Mapping

BOOTSTRAP_ENV = "LOGBERG_KAFKA_BOOTSTRAP"
TOPIC_ENV = "LOGBERG_KAFKA_TOPIC"
# Kafka's own rule for topic names (kafka.common.internals.Topic).
TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
HOST_PORT = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")


@dataclass(frozen=True)
class TopicUri:
    """Where a topic is: the bootstrap servers (`host:port,...`) and the topic's name."""

    bootstrap: str
    topic: str
    setting: str  # what named them, for messages
    options: ClientOptions = field(default_factory=ClientOptions)  # the clients' own, checked

    @property
    def uri(self) -> str:
        return f"kafka://{self.bootstrap}/{self.topic}"


def parse_topic_uri(
    raw: str, setting: str, local_bootstrap: str | None = None, topic_needed: bool = True
) -> TopicUri:
    """`kafka://[BOOTSTRAP]/[TOPIC]`, checked; the defaults filled from the environment.
    `topic_needed=False`: the brokers alone (the topic may stay empty)."""
    m = re.fullmatch(r"kafka://([^/]*)/?([^/]*)", raw.strip())
    if not m:
        raise ConfigError(f"{setting} {raw!r}: expected kafka://HOST:PORT/TOPIC")
    hosts, topic = m.group(1), m.group(2)
    where = setting
    if not hosts:
        hosts = os.environ.get(BOOTSTRAP_ENV, "").strip() or (local_bootstrap or "")
        where = BOOTSTRAP_ENV if os.environ.get(BOOTSTRAP_ENV) else setting
        if not hosts:
            raise ConfigError(
                f"{setting} {raw!r} names no broker, and neither {BOOTSTRAP_ENV} is set nor "
                "the local broker runs (`logberg local up --kafka`)"
            )
    for h in hosts.split(","):
        if not HOST_PORT.match(h):
            raise ConfigError(f"{where} {hosts!r}: expected HOST:PORT[,HOST:PORT...]")
    if not topic:
        topic = os.environ.get(TOPIC_ENV, "").strip()
        if not topic and not topic_needed:
            return TopicUri(hosts, "", where)
        if not topic:
            raise ConfigError(f"{setting} {raw!r} names no topic, and {TOPIC_ENV} is not set")
    if not TOPIC.match(topic):
        raise ConfigError(f"{setting} {raw!r}: {topic!r} is not a valid Kafka topic name")
    return TopicUri(hosts, topic, where)


def _admin(bootstrap: str, conf: Mapping[str, Any] | None = None) -> Any:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _quiet(), **(conf or {})})
    if conf and "oauth_cb" in conf:
        admin.poll(0)  # serves the token callback, which the first request waits for
    return admin


def _conf(t: TopicUri) -> dict[str, Any]:
    """librdkafka's configuration of the topic's client options."""
    return t.options.librdkafka(t.bootstrap)


def _quiet() -> Any:
    """librdkafka's own log lines (connection refused, retries) go to Python logging at
    DEBUG: a broker that does not answer is reported once, by the caller."""
    import logging

    log = logging.getLogger("logberg.kafka.client")
    return log


def cluster_answers(bootstrap: str, timeout: float = 5.0) -> bool:
    """The brokers answer a metadata request, and the cluster has a controller."""
    from confluent_kafka import KafkaException

    try:
        md = _admin(bootstrap).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return bool(md.brokers) and md.controller_id >= 0


def _metadata(t: TopicUri, timeout: float, topic: str | None = None) -> Any:
    """A metadata request with the topic's client options; a broker that does not answer
    is a ConfigError naming the setting."""
    from confluent_kafka import KafkaException

    try:
        return _admin(t.bootstrap, _conf(t)).list_topics(topic=topic, timeout=timeout)
    except KafkaException as e:
        raise ConfigError(
            f"{t.setting} {t.bootstrap}: the Kafka broker does not answer ({e.args[0]})"
        ) from None


def brokers_answer(t: TopicUri, timeout: float = 5.0) -> None:
    """The brokers answer a metadata request (signed in with the topic's client options);
    else a ConfigError naming the setting."""
    _metadata(t, timeout)


def partitions(t: TopicUri, timeout: float = 10.0) -> list[int]:
    """The topic's partitions; a broker that does not answer or a topic it does not have is
    a ConfigError naming the setting."""
    md = _metadata(t, timeout, t.topic)
    found = md.topics.get(t.topic)
    if found is None or found.error is not None or not found.partitions:
        raise ConfigError(
            f"{t.setting} {t.uri}: the broker has no topic {t.topic!r}"
            + (f" ({found.error.str()})" if found is not None and found.error else "")
        )
    return sorted(found.partitions)


def create_topic(t: TopicUri, partitions: int, timeout: float = 30.0) -> bool:
    """Create the topic with `partitions` (one replica per partition beyond the broker's
    own count is not asked for); False when it exists already."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    # Held until the result: a dropped client ends its requests.
    admin = _admin(t.bootstrap, _conf(t))
    futures = admin.create_topics(
        [NewTopic(t.topic, num_partitions=partitions)], operation_timeout=timeout
    )
    try:
        futures[t.topic].result(timeout)
    except KafkaException as e:
        if e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise ConfigError(
            f"{t.setting} {t.uri}: cannot create the topic ({e.args[0].str()})"
        ) from None
    return True


def end_offsets(t: TopicUri, timeout: float = 10.0) -> dict[int, int]:
    """Each partition's end offset (the next offset a message will get)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": t.bootstrap,
            "group.id": "logberg-offsets",
            "enable.auto.commit": False,
            "logger": _quiet(),
            **_conf(t),
        }
    )
    if t.options.msk_iam:
        consumer.poll(0)  # serves the token callback (get_watermark_offsets does not)
    try:
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(t.topic, p), timeout)[1])
            for p in partitions(t, timeout)
        }
    finally:
        consumer.close()
