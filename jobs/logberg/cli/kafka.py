"""`logberg kafka topics create | list | describe`: the topics a log shipper writes to and
`ingest --from` reads, made and inspected with the same client options as ingest.

The brokers: `--bootstrap HOST:PORT[,...]`, else LOGBERG_KAFKA_BOOTSTRAP, else the local
broker (`logberg local up --kafka`); the clients' own options: LOGBERG_KAFKA_OPTIONS and
`--kafka-option KEY=VALUE` (Amazon MSK's IAM sign-in among them).

`describe` puts each partition's end offset beside where the lakehouse ends in it (the
offsets `ingest --from` committed, in the kafka_offsets table) and the lag between them.
It asks the metastore first whether that table exists (one thrift call, no Spark), and
reads it only then, on the Spark a query command uses (the warm Spark Connect server when
`logberg local up` runs one); `--no-lakehouse` shows the topic's side alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from logberg.cli.command import Command, action, actions

if TYPE_CHECKING:
    from logberg.lakehouse.kafka import TopicUri


def brokers(a: argparse.Namespace, topic: str = "") -> TopicUri:
    """The brokers `--bootstrap` (or the environment) names, with the client options."""
    from logberg.lakehouse import environment
    from logberg.lakehouse.kafka import parse_topic_uri
    from logberg.lakehouse.kafka_options import ClientOptions

    if "/" in a.bootstrap:
        from logberg.errors import ConfigError

        raise ConfigError(f"--bootstrap {a.bootstrap!r}: expected HOST:PORT[,HOST:PORT...]")
    local = None if a.bootstrap else environment.current().kafka_bootstrap()
    t = parse_topic_uri(f"kafka://{a.bootstrap}/", "--bootstrap", local, topic_needed=False)
    return dataclasses.replace(t, topic=topic, options=ClientOptions.from_env(a.kafka_option))


def create(a: argparse.Namespace) -> int:
    from logberg.lakehouse.kafka_admin import TopicSpec, ensure, parse_configs

    spec = TopicSpec(
        a.name, a.partitions, a.replication_factor, parse_configs(a.config), setting="topic"
    )
    t = brokers(a, a.name)
    made, info = ensure(t, spec)
    what = f"{len(info.partitions)} partition(s), replication factor {info.replication_factor}"
    if made:
        print(f"topic {info.name} made at {t.bootstrap}: {what}")
    else:
        print(f"topic {info.name} exists at {t.bootstrap} as asked: {what}")
    return 0


def list_topics(a: argparse.Namespace) -> int:
    from logberg.lakehouse.kafka_admin import topics
    from logberg.output import write_rows

    t = brokers(a)
    found = topics(t)
    rows = [(i.name, len(i.partitions), i.replication_factor) for i in found]
    write_rows(["topic", "partitions", "replication_factor"], rows, a.format, sys.stdout)
    return 0


def committed(topic: str) -> tuple[dict[int, int] | None, str]:
    """Where the lakehouse ends in the topic (partition -> next offset), or None and why
    not. The metastore says first whether ingest ever committed a Kafka batch."""
    from logberg.errors import ConfigError, ServiceError
    from logberg.lakehouse import environment
    from logberg.lakehouse.schema import DATABASE, KAFKA_OFFSETS
    from logberg.lakehouse.thrift import HiveMetastoreClient, MetastoreError, ThriftError

    try:
        uri = environment.current().lakehouse_config().metastore_uri
        with HiveMetastoreClient.from_uri(uri, timeout=5.0) as client:
            names = set(client.get_all_tables(DATABASE))
    except (ConfigError, ValueError, ThriftError, MetastoreError) as e:
        return None, f"the lakehouse's metastore does not answer ({e})"
    if KAFKA_OFFSETS.name not in names:
        return None, f"the lakehouse has no {KAFKA_OFFSETS.name} table (no `ingest --from` yet)"
    from logberg.cli.spark import session
    from logberg.pipeline.kafka.job import lakehouse_offsets

    try:
        return lakehouse_offsets(session("logberg-kafka-topics"), topic), ""
    except (ConfigError, ServiceError) as e:
        return None, f"the lakehouse cannot be read ({e})"
    except Exception as e:
        from logberg.lakehouse.connect import server_failure

        failed = server_failure(e)  # the Spark Connect server, not the query
        if failed is None:
            raise
        return None, f"the lakehouse cannot be read ({failed})"


def describe(a: argparse.Namespace) -> int:
    from logberg.lakehouse.kafka import end_offsets
    from logberg.lakehouse.kafka_admin import check_name
    from logberg.lakehouse.kafka_admin import describe as topic_info
    from logberg.output import write_rows

    check_name(a.name)
    t = brokers(a, a.name)
    info = topic_info(t)
    ends = end_offsets(t)
    notes = sys.stdout if a.format == "table" else sys.stderr  # keeps csv and jsonl plain
    print(
        f"topic {info.name} at {t.bootstrap}: {len(info.partitions)} partition(s), "
        f"replication factor {info.replication_factor}",
        file=notes,
    )
    where, why = (None, "not read (--no-lakehouse)") if not a.lakehouse else committed(a.name)
    columns = ["partition", "leader", "replicas", "in_sync", "end_offset"]
    if where is not None:
        columns += ["committed", "lag"]
    rows = []
    lag = 0
    for p in info.partitions:
        end = ends.get(p.partition, 0)
        row: list[object] = [p.partition, p.leader, ",".join(map(str, p.replicas)),
                             ",".join(map(str, p.in_sync)), end]  # fmt: skip
        if where is not None:
            at = where.get(p.partition, 0)
            lag += max(0, end - at)
            row += [at, max(0, end - at)]
        rows.append(row)
    write_rows(columns, rows, a.format, sys.stdout)
    if where is None:
        print(f"committed offsets: {why}; end offsets only", file=sys.stderr)
    else:
        print(f"{lag:,} message(s) of {t.uri} not in the lakehouse yet", file=notes)
    return 0


def client_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bootstrap",
        default="",
        metavar="HOST:PORT[,...]",
        help="the brokers (default: LOGBERG_KAFKA_BOOTSTRAP, else the local broker of "
        "`logberg local up --kafka`)",
    )
    p.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka client option, in the Java client's name, over LOGBERG_KAFKA_OPTIONS, "
        "repeatable (as `ingest --kafka-option`: e.g. Amazon MSK's IAM sign-in)",
    )


def output_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["table", "csv", "jsonl"], default="table")


def arguments(p: argparse.ArgumentParser) -> None:
    groups = actions(p, dest="group")
    topics = groups.add_parser(
        "topics", help="make, list or describe topics", description="make, list or describe topics"
    )
    sub = actions(topics)
    c = action(
        sub,
        "create",
        create,
        "make a topic (an existing one with the same settings is fine; other settings are "
        "an error naming them)",
    )
    c.add_argument("name", metavar="NAME", help="the topic's name")
    c.add_argument(
        "--partitions", type=int, metavar="N", help="default: the broker's num.partitions"
    )
    c.add_argument(
        "--replication-factor",
        type=int,
        metavar="N",
        help="at most the brokers' count (default: the broker's default.replication.factor)",
    )
    c.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (retention.ms=..., max.message.bytes=...), repeatable",
    )
    client_arguments(c)
    ls = action(sub, "list", list_topics, "the cluster's topics (not Kafka's internal ones)")
    client_arguments(ls)
    output_argument(ls)
    d = action(
        sub,
        "describe",
        describe,
        "a topic's partitions: end offsets, where the lakehouse ends in them, the lag",
    )
    d.add_argument("name", metavar="NAME", help="the topic's name")
    d.add_argument(
        "--no-lakehouse",
        dest="lakehouse",
        action="store_false",
        help="the topic alone: do not read the offsets ingest committed",
    )
    client_arguments(d)
    output_argument(d)


COMMAND = Command(
    "kafka",
    "make, list and describe the Kafka topics log shippers write to and ingest reads",
    arguments=arguments,
    order=45,
)
