"""`logberg ingest --from kafka://HOST:PORT/TOPIC`: the ingest command's Kafka source, its
options and its handler (the ingest command, jobs/logberg/cli/ingest.py, hands over here).

Continuous, or `--once` (the topic as it is now, then stop); `--dry-run` says how far the
lakehouse is behind the topic, per partition, and pushes that lag with a Pushgateway.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from logberg.cli.spark import session
from logberg.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from logberg.pipeline.kafka.config import KafkaIngestConfig

# ingest's file options that mean nothing for a topic (option -> its default).
FILE_ONLY = {
    "input": None,
    "since": None,
    "full": False,
    "follow": False,
    "max_files_per_trigger": None,
    "max_bytes_per_trigger": None,
}


def arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("from a Kafka topic (--from; --once, --checkpoint, ... apply)")
    g.add_argument(
        "--from",
        dest="source",
        metavar="kafka://HOST:PORT/TOPIC",
        help="read the topic's messages, continuously (with --once: what it holds now); an "
        "empty HOST:PORT is LOGBERG_KAFKA_BOOTSTRAP, else the local broker; an empty TOPIC "
        "is LOGBERG_KAFKA_TOPIC",
    )
    g.add_argument(
        "--value",
        default="raw",
        metavar="raw|json:FIELD",
        help="a message's value: the raw line (default), or a JSON envelope with the line in "
        "FIELD (Fluent Bit: json:log, Vector: json:message), with the shipper's host, file "
        "and offset as the line's source identity when it sends them",
    )
    g.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE|@PATH",
        help="a Kafka client option, in the Java client's name, or @PATH: a JSON file of "
        "them (a mounted Secret), repeatable, over LOGBERG_KAFKA_OPTIONS (a JSON object), "
        "itself over LOGBERG_KAFKA_OPTIONS_FILE's; e.g. security.protocol=SASL_SSL with "
        "sasl.mechanism=AWS_MSK_IAM, sasl.jaas.config and "
        "sasl.client.callback.handler.class for Amazon MSK's IAM sign-in. Secret values "
        "(passwords, the JAAS configuration) are masked wherever logberg shows them",
    )
    g.add_argument(
        "--max-messages-per-trigger",
        type=int,
        metavar="N",
        help="messages per micro-batch (default: 5,000,000 raw lines, 1,000,000 envelopes)",
    )
    g.add_argument(
        "--min-partitions",
        type=int,
        metavar="N",
        help="raw lines: read a batch in at least N tasks, a partition's offsets split into "
        "pieces of at least 20,000 messages to make them up (default: the cores Spark runs "
        "tasks on, so a one-partition topic is parsed on all of them; 1: one task per "
        "partition)",
    )


def kafka_config(a: argparse.Namespace) -> KafkaIngestConfig:
    from logberg.cli.command import config_from
    from logberg.lakehouse import environment
    from logberg.lakehouse.kafka import parse_topic_uri
    from logberg.lakehouse.kafka_options import ClientOptions
    from logberg.pipeline.kafka.config import (
        DEFAULT_TRIGGER_SECONDS,
        KafkaIngestConfig,
        ValueFormat,
    )

    for name, default in FILE_ONLY.items():
        if getattr(a, name, default) not in (default, None):
            raise ConfigError(f"--{name.replace('_', '-')}: reads files, not with --from")
    if a.nginx_format != "combined" or a.client_ip != "remote_addr":
        raise ConfigError(
            "--log-format and --client-ip: ingest --from reads combined lines with "
            "$remote_addr as the client (the other formats are for files)"
        )
    source = parse_topic_uri(a.source, "--from", environment.current().kafka_bootstrap())
    source = dataclasses.replace(source, options=ClientOptions.from_env(a.kafka_option))
    return config_from(
        KafkaIngestConfig,
        a,
        source=source,
        value=ValueFormat.parse(a.value),
        trigger_seconds=a.trigger_seconds or DEFAULT_TRIGGER_SECONDS,
        analytics_every=1 if a.analytics_every is None else a.analytics_every,
    )


def run(a: argparse.Namespace) -> int:
    from logberg.lakehouse import kafka
    from logberg.pipeline import metrics

    cfg = kafka_config(a)
    gateway = metrics.gateway()  # a non-URL LOGBERG_PUSHGATEWAY fails before Spark
    partitions = kafka.partitions(cfg.source)  # so do a wrong broker and a missing topic
    if a.dry_run:
        return lag(session("logberg-ingest"), cfg, partitions, gateway)
    from logberg.pipeline.analytics import AnalyticsConfig, analytics
    from logberg.pipeline.kafka.job import KafkaBatchResult, ingest_topic

    # The micro-batch callback keeps the stream's state in this process, as --follow does.
    spark = session("logberg-ingest-kafka", in_process="ingest --from")

    def committed(result: KafkaBatchResult) -> None:
        print(result.summary(), flush=True)
        metrics.push_kafka(gateway, cfg.source.topic, result)

    def refresh(s: SparkSession) -> None:
        result = analytics(s, AnalyticsConfig())
        print(result.summary(), flush=True)
        metrics.push_analytics(gateway, s, result)

    ingest_topic(spark, cfg, committed, refresh if cfg.analytics_every else None)
    return 0


def lag(
    spark: SparkSession, cfg: KafkaIngestConfig, partitions: list[int], gateway: str | None
) -> int:
    """`--dry-run`: per partition, where the lakehouse ends and where the topic ends."""
    from logberg.lakehouse import kafka, tables
    from logberg.lakehouse.schema import KAFKA_OFFSETS
    from logberg.pipeline import metrics
    from logberg.pipeline.kafka.job import lakehouse_offsets

    ends = (
        lakehouse_offsets(spark, cfg.source.topic)
        if KAFKA_OFFSETS.name in tables.existing(spark)
        else {}
    )
    topic_ends = kafka.end_offsets(cfg.source)
    behind = {p: max(0, topic_ends.get(p, 0) - ends.get(p, 0)) for p in partitions}
    for p in partitions:
        print(
            f"partition {p}: lakehouse at {ends.get(p, 0):,}, topic at "
            f"{topic_ends.get(p, 0):,}, {behind[p]:,} message(s) behind"
        )
    print(f"{sum(behind.values()):,} message(s) of {cfg.source.uri} wait", flush=True)
    metrics.push_kafka_lag(gateway, cfg.source.topic, behind)
    return 0
