"""`logberg wait-ready`: until the metastore answers and the buckets exist (and, `--kafka`,
the Kafka brokers answer): init containers."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input", action="append", default=[], metavar="URI", help="also this bucket (repeatable)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between checks")
    p.add_argument(
        "--event-log-dir",
        metavar="URI",
        help="also this s3a:// prefix of Spark event logs (S3A needs it to exist as a directory)",
    )
    p.add_argument(
        "--create-event-log-dir",
        action="store_true",
        help="write the prefix's marker object when it is missing, instead of waiting for it",
    )
    p.add_argument(
        "--event-log-only",
        action="store_true",
        help="wait for the event-log prefix only, not the metastore and buckets (History Server)",
    )
    p.add_argument(
        "--no-metastore",
        action="store_true",
        help="wait for the --input buckets and the event-log prefix, not the metastore and "
        "warehouse (pods that only write to S3, such as the generator: they may not reach the "
        "metastore)",
    )
    p.add_argument(
        "--kafka",
        action="store_true",
        help="also until the Kafka brokers (LOGBERG_KAFKA_BOOTSTRAP, signed in with the options of "
        "LOGBERG_KAFKA_OPTIONS_FILE and LOGBERG_KAFKA_OPTIONS) answer: a pod that reads or "
        "writes a topic",
    )


def run(a: argparse.Namespace) -> int:
    from logberg.errors import ConfigError
    from logberg.lakehouse import environment
    from logberg.lakehouse.readiness import EventLogDir, wait_ready

    if (a.create_event_log_dir or a.event_log_only) and not a.event_log_dir:
        raise ConfigError("--create-event-log-dir and --event-log-only need --event-log-dir")
    event_log = EventLogDir(a.event_log_dir, a.create_event_log_dir) if a.event_log_dir else None
    cfg = environment.current().lakehouse_config()
    brokers = None
    if a.kafka:
        import dataclasses

        from logberg.lakehouse.kafka import parse_topic_uri
        from logberg.lakehouse.kafka_options import ClientOptions

        env = environment.current()
        brokers = parse_topic_uri("kafka:///", "--kafka", env.kafka_bootstrap(), topic_needed=False)
        brokers = dataclasses.replace(brokers, options=ClientOptions.from_env())
    waited = wait_ready(
        cfg,
        a.input,
        timeout=a.timeout,
        interval=a.interval,
        event_log=event_log,
        lakehouse=not a.event_log_only,
        metastore=not a.no_metastore,
        kafka=brokers,
    )
    lakehouse = not (a.event_log_only or a.no_metastore)
    what = [f"metastore {cfg.metastore_uri}", f"warehouse {cfg.warehouse}"] if lakehouse else []
    what += [f"input {uri}" for uri in a.input if not a.event_log_only]
    what += [f"event logs {a.event_log_dir}"] if a.event_log_dir else []
    what += [f"Kafka {brokers.bootstrap}"] if brokers else []
    print(f"ready after {waited:.0f}s: " + ", ".join(what), flush=True)
    return 0


COMMAND = Command(
    "wait-ready",
    "wait until the metastore answers and the warehouse (and --input) buckets exist",
    run,
    arguments,
    order=30,
)
