"""`logberg local up | down | status`: the embedded default's services under $LOGBERG_HOME."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command, action, actions


def up(a: argparse.Namespace) -> int:
    from logberg.errors import ConfigError
    from logberg.lakehouse.kafka_admin import parse_spec
    from logberg_platform import local
    from logberg_platform.local_settings import LocalSettings

    if a.topic and not a.kafka:
        raise ConfigError("--topic: makes a topic on the local Kafka broker; give --kafka too")
    topics = tuple(parse_spec(raw, "--topic") for raw in a.topic)
    print(
        "\n".join(
            local.up(
                LocalSettings.from_env(),
                with_s3=a.s3,
                with_connect=a.connect,
                with_history=a.history,
                with_kafka=a.kafka,
                topics=topics,
            )
        )
    )
    return 0


def down(a: argparse.Namespace) -> int:
    from logberg_platform import local
    from logberg_platform.local_settings import LocalSettings

    print("\n".join(local.down(LocalSettings.from_env())))
    return 0


def status(a: argparse.Namespace) -> int:
    from logberg_platform import local
    from logberg_platform.local_settings import LocalSettings

    for st in local.status(LocalSettings.from_env()):
        state = f"running (pid {st.pid})" if st.running else "stopped"
        print(f"{st.name:15} {state:22} {st.where}  log: {st.log}")
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    sub = actions(p)
    u = action(
        sub, "up", up, "start the metastore, the Spark Connect server (and S3) if not running"
    )
    u.add_argument("--s3", action="store_true", help="also start the local S3-compatible server")
    u.add_argument(
        "--no-connect",
        dest="connect",
        action="store_false",
        help="do not start the Spark Connect server (commands then start Spark in-process)",
    )
    u.add_argument(
        "--history",
        action="store_true",
        help="also start Spark's History Server over this home's event logs (`logberg ui`)",
    )
    u.add_argument(
        "--kafka",
        action="store_true",
        help="also start a Kafka broker (KRaft, on 127.0.0.1:LOGBERG_KAFKA_PORT, default 9092) "
        "for `generate --output kafka://...` and `ingest --from kafka://...`",
    )
    u.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="with --kafka: make this topic on the broker unless it exists as asked "
        "(default partitions: the broker's num.partitions, 1), repeatable; as "
        "`logberg kafka topics create` does",
    )
    action(sub, "down", down, "stop only what `up` started under this LOGBERG_HOME")
    action(sub, "status", status, "what runs where")


COMMAND = Command(
    "local",
    "start, stop or inspect the local metastore, Spark Connect server and S3 server",
    arguments=arguments,
    order=10,
)
