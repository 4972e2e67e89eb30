"""`logberg ingest`: raw logs into nginx_logs.access_logs (batch, or `--follow`)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING

from logberg.cli import kafka_source
from logberg.cli.command import Command, config_from
from logberg.cli.spark import default_landing, session
from logberg.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from logberg.pipeline.ingest.config import FollowConfig, IngestConfig


def arguments(p: argparse.ArgumentParser) -> None:
    """What to read and how (also `logberg run`'s)."""
    p.add_argument(
        "--input",
        action="append",
        default=None,
        metavar="URI",
        help="landing prefix to scan for .log/.gz, repeatable (default: LOGBERG_LANDING, "
        "else $LOGBERG_HOME/landing)",
    )
    p.add_argument(
        "--since",
        type=dt.date.fromisoformat,
        default=None,
        metavar="DATE",
        help="only files under dt=DATE or later",
    )
    p.add_argument(
        "--full", action="store_true", help="re-read every file, ignoring the ledger (still exact)"
    )
    p.add_argument(
        "--max-bytes-per-commit",
        type=int,
        default=2 << 30,
        metavar="N",
        help="input bytes per commit (default 2 GiB)",
    )
    p.add_argument(
        "--log-format",
        dest="nginx_format",  # not the global --log-format (logging), which comes first
        default="combined",
        metavar="FORMAT",
        help="combined (default), main, ingress-nginx, json, or your nginx log_format as "
        "written in nginx.conf (the directive or its string)",
    )
    p.add_argument(
        "--client-ip",
        choices=["remote_addr", "x-forwarded-for"],
        default="remote_addr",
        help="where the client address comes from (default remote_addr); x-forwarded-for "
        "takes the right-most address that is not a trusted proxy",
    )
    p.add_argument(
        "--trusted-proxies",
        metavar="CIDR,...",
        help="with --client-ip x-forwarded-for: your load balancers' and proxies' ranges",
    )
    p.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="skip the post-commit check that every line read landed once",
    )


def follow_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("continuous ingest (--follow, --from)")
    g.add_argument("--follow", action="store_true", help="keep ingesting new files (streaming)")
    g.add_argument(
        "--once",
        action="store_true",
        help="with --follow or --from: ingest what is there now, then stop",
    )
    g.add_argument(
        "--trigger-seconds",
        type=float,
        help="micro-batch interval (default 10; with --from 1)",
    )
    g.add_argument("--max-files-per-trigger", type=int, help="files per micro-batch (default 100)")
    g.add_argument(
        "--max-bytes-per-trigger", type=int, help="input bytes per micro-batch (instead of files)"
    )
    g.add_argument(
        "--checkpoint",
        metavar="URI",
        help="default <warehouse>/_checkpoints/ingest (with --from: .../kafka/TOPIC)",
    )
    g.add_argument(
        "--analytics-every",
        type=int,
        metavar="N",
        help="refresh analytics after every N micro-batches (default 1; 0: never)",
    )


FOLLOW_ONLY = (
    "once",
    "trigger_seconds",
    "max_files_per_trigger",
    "max_bytes_per_trigger",
    "checkpoint",
    "analytics_every",
)


def follow_config(a: argparse.Namespace) -> FollowConfig | None:
    from logberg.pipeline.ingest.config import (
        DEFAULT_MAX_FILES_PER_TRIGGER,
        DEFAULT_TRIGGER_SECONDS,
        FollowConfig,
    )

    if not a.follow:
        for name in FOLLOW_ONLY:
            if getattr(a, name) not in (None, False):
                raise ConfigError(f"--{name.replace('_', '-')} needs --follow")
        return None
    by_bytes = a.max_bytes_per_trigger is not None
    return config_from(
        FollowConfig,
        a,
        trigger_seconds=DEFAULT_TRIGGER_SECONDS if a.trigger_seconds is None else a.trigger_seconds,
        max_files_per_trigger=a.max_files_per_trigger
        or (None if by_bytes else DEFAULT_MAX_FILES_PER_TRIGGER),
        analytics_every=1 if a.analytics_every is None else a.analytics_every,
    )


def ingest_config(a: argparse.Namespace, follow: FollowConfig | None = None) -> IngestConfig:
    from logberg.pipeline.ingest.config import IngestConfig
    from logberg.pipeline.logformat import ClientRule, Reading, compile_format

    reading = Reading(
        compile_format(a.nginx_format), ClientRule.parse(a.client_ip, a.trusted_proxies)
    )
    inputs = tuple(a.input or [default_landing()])
    return config_from(IngestConfig, a, inputs=inputs, reading=reading, follow=follow)


def run(a: argparse.Namespace) -> int:
    from logberg.pipeline import metrics
    from logberg.pipeline.ingest.batch import ingest

    if a.source is not None:
        return kafka_source.run(a)
    if getattr(a, "kafka_option", None):
        raise ConfigError("--kafka-option: the clients of a topic's (--from), not with files")
    cfg = ingest_config(a, follow_config(a))
    if a.dry_run and cfg.follow is not None:
        raise ConfigError("--dry-run lists what a batch ingest would read: not with --follow")
    gateway = metrics.gateway()  # a non-URL LOGBERG_PUSHGATEWAY fails before Spark
    if a.dry_run:
        return dry_run(session("logberg-ingest"), cfg, gateway)
    if cfg.follow is None:
        spark = session("logberg-ingest")
    else:
        # The micro-batch callback keeps the stream's state (its query id, the batches since
        # the last analytics, the results it prints) in this process; on Spark Connect it
        # would run in a worker of the server, apart from that state.
        spark = session("logberg-ingest-follow", in_process="ingest --follow")
    if cfg.follow is None:
        result = ingest(spark, cfg)
        print(result.summary(), flush=True)
        metrics.push_ingest(gateway, spark, result, cfg)
        return 0
    from logberg.pipeline.analytics import AnalyticsConfig, analytics
    from logberg.pipeline.ingest.batch import IngestResult
    from logberg.pipeline.ingest.stream import follow

    def committed(batch_id: int, result: IngestResult) -> None:
        print(f"stream batch {batch_id} committed: {result.summary()}", flush=True)
        metrics.push_ingest(gateway, spark, result, cfg)

    def refresh(s: SparkSession) -> None:
        result = analytics(s, AnalyticsConfig())
        print(result.summary(), flush=True)
        metrics.push_analytics(gateway, s, result)

    follow(spark, cfg, committed, refresh)
    return 0


def dry_run(spark: SparkSession, cfg: IngestConfig, gateway: str | None) -> int:
    """`--dry-run`: the files an ingest would read now (new, or changed since their last
    ingest), by a fresh listing against the ledger; nothing is read or written. With a
    Pushgateway, its pending gauges are replaced by this listing's."""
    from logberg.lakehouse.schema import LEDGER
    from logberg.lakehouse.tables import existing
    from logberg.pipeline import metrics
    from logberg.pipeline.ingest.plan import pending

    waiting = pending(
        spark, cfg.inputs, cfg.since, ledger=LEDGER.name in existing(spark), full=cfg.full
    )
    changed = {f.uri for f in waiting.changed}
    for f in waiting.files:
        when = f.modified.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        kind = "changed" if f.uri in changed else "new"
        print(f"{kind:<8}{when}  {f.size:>12,}  {f.uri}")
    print(
        f"{len(waiting.files)} file(s) to ingest ({len(changed)} changed) of "
        f"{waiting.listed} listed",
        flush=True,
    )
    metrics.push_pending(gateway, [f.modified.timestamp() for f in waiting.files])
    return 0


def all_arguments(p: argparse.ArgumentParser) -> None:
    arguments(p)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the files an ingest would read now (new, or changed since their last "
        "ingest; with --from: the messages behind, per partition) and ingest nothing; with "
        "LOGBERG_PUSHGATEWAY, push that as the pending (or lag) gauges",
    )
    follow_arguments(p)
    kafka_source.arguments(p)


COMMAND = Command(
    "ingest", "ingest raw logs into nginx_logs.access_logs", run, all_arguments, order=40
)
