"""The `logberg` command line: one argparse tree, every subcommand and its --help.

Each handler turns parsed options into a typed config, builds the session, calls one job
and prints its result. Logging goes to stderr (`--log-format json` for clusters); results
go to stdout. The same commands run as SparkApplications (jobs/spark_entry.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from logberg.errors import ConfigError, ServiceError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from logberg.lakehouse.session import LakehouseConfig
    from logberg.pipeline.analytics import AnalyticsConfig
    from logberg.pipeline.ingest.config import FollowConfig, IngestConfig
    from logberg_platform.k8s.kube import Kube

log = logging.getLogger("logberg")
Handler = Callable[[argparse.Namespace], int]


# ---- logging ------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out)


def configure_logging(fmt: str, level: str) -> None:
    """logberg's own loggers to stderr, as human lines or JSON (Spark keeps its log4j)."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level.upper())
    log.propagate = False


# ---- sessions -----------------------------------------------------------------------------


def in_cluster() -> bool:
    """Started by spark-submit (a SparkApplication) or in a cluster pod."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or os.environ.get("LOGBERG_PROFILE") == "cluster"


def session(app_name: str) -> SparkSession:
    """In a cluster: LOGBERG_* settings, Spark as submitted. Else the local platform."""
    if in_cluster():
        from logberg.lakehouse.session import LakehouseConfig, build_session

        return build_session(app_name, LakehouseConfig.from_env())
    from logberg_platform import local

    return local.session(app_name)


def default_landing() -> str:
    env = os.environ.get("LOGBERG_LANDING")
    if env:
        return env
    if in_cluster():
        raise ConfigError("--input: not given, and LOGBERG_LANDING is not set")
    from logberg_platform.settings import LocalSettings

    return LocalSettings.from_env().landing.as_uri()


def lakehouse_config() -> LakehouseConfig:
    """In a cluster: the LOGBERG_* settings. Else the local platform's."""
    from logberg.lakehouse.session import LakehouseConfig

    if in_cluster():
        return LakehouseConfig.from_env()
    from logberg_platform import local
    from logberg_platform.settings import LocalSettings

    return local.lakehouse_config(LocalSettings.from_env())


# ---- local platform and SQL ---------------------------------------------------------------


def cmd_local(a: argparse.Namespace) -> int:
    from logberg_platform import local
    from logberg_platform.settings import LocalSettings

    s = LocalSettings.from_env()
    if a.action == "up":
        lines = local.up(s, with_s3=a.s3)
    elif a.action == "down":
        lines = local.down(s)
    else:
        lines = []
        for st in local.status(s):
            state = f"running (pid {st.pid})" if st.running else "stopped"
            lines.append(f"{st.name:15} {state:22} {st.where}  log: {st.log}")
    print("\n".join(lines))
    return 0


def cmd_sql(args: list[str]) -> int:
    from logberg.lakehouse.session import LakehouseConfig, SparkRuntime
    from logberg.lakehouse.sqlshell import exec_spark_sql

    if in_cluster():
        return exec_spark_sql(LakehouseConfig.from_env(), SparkRuntime(), args)
    from logberg_platform import local
    from logberg_platform.settings import LocalSettings

    s = LocalSettings.from_env()
    cfg = local.lakehouse_config(s)
    return exec_spark_sql(cfg, local.spark_runtime(s, cfg), args)


def cmd_wait_ready(a: argparse.Namespace) -> int:
    from logberg.lakehouse.readiness import wait_ready

    cfg = lakehouse_config()
    waited = wait_ready(cfg, a.input, timeout=a.timeout, interval=a.interval)
    print(
        f"ready after {waited:.0f}s: metastore {cfg.metastore_uri}, warehouse {cfg.warehouse}"
        + "".join(f", input {uri}" for uri in a.input),
        flush=True,
    )
    return 0


def cmd_query(a: argparse.Namespace) -> int:
    from logberg.output import write_rows
    from logberg.pipeline.query import query

    columns, rows = query(session("logberg-query"), a.sql, a.as_of)
    write_rows(columns, rows, a.format, sys.stdout)
    return 0


def cmd_top(a: argparse.Namespace) -> int:
    from logberg.output import write_rows
    from logberg.pipeline.summary import top_tables

    sections = top_tables(session("logberg-top"))
    if not sections:
        print("no analytics yet: run `logberg run` first", file=sys.stderr)
        return 1
    for title, columns, rows in sections:
        print(f"\n{title}")
        write_rows(columns, rows, "table", sys.stdout)
    print("\nExplore further: `.venv/bin/logberg sql` (try: USE nginx_logs; SHOW TABLES;)")
    print("See it as one HTML page: `make report` (or `.venv/bin/logberg report`)")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    from logberg.pipeline.report.data import ReportConfig
    from logberg.pipeline.report.run import report

    cfg = ReportConfig(since=a.since, until=a.until, output=a.output)
    warehouse = lakehouse_config().warehouse
    print(report(session("logberg-report"), cfg, warehouse).summary(), flush=True)
    return 0


# ---- the pipeline -------------------------------------------------------------------------


def add_ingest_args(p: argparse.ArgumentParser) -> None:
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


def add_follow_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("continuous ingest (--follow)")
    g.add_argument("--follow", action="store_true", help="keep ingesting new files (streaming)")
    g.add_argument(
        "--once", action="store_true", help="with --follow: ingest what is there now, then stop"
    )
    g.add_argument("--trigger-seconds", type=float, help="micro-batch interval (default 10)")
    g.add_argument("--max-files-per-trigger", type=int, help="files per micro-batch (default 100)")
    g.add_argument(
        "--max-bytes-per-trigger", type=int, help="input bytes per micro-batch (instead of files)"
    )
    g.add_argument("--checkpoint", metavar="URI", help="default <warehouse>/_checkpoints/ingest")
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
    return FollowConfig(
        trigger_seconds=DEFAULT_TRIGGER_SECONDS if a.trigger_seconds is None else a.trigger_seconds,
        max_files_per_trigger=a.max_files_per_trigger
        or (None if by_bytes else DEFAULT_MAX_FILES_PER_TRIGGER),
        max_bytes_per_trigger=a.max_bytes_per_trigger,
        checkpoint=a.checkpoint,
        once=a.once,
        analytics_every=1 if a.analytics_every is None else a.analytics_every,
    )


def ingest_config(a: argparse.Namespace, follow: FollowConfig | None = None) -> IngestConfig:
    from logberg.pipeline.ingest.config import IngestConfig
    from logberg.pipeline.logformat import ClientRule, Reading, compile_format

    reading = Reading(
        compile_format(a.nginx_format), ClientRule.parse(a.client_ip, a.trusted_proxies)
    )
    return IngestConfig(
        reading=reading,
        inputs=tuple(a.input or [default_landing()]),
        since=a.since,
        full=a.full,
        max_bytes_per_commit=a.max_bytes_per_commit,
        verify=a.verify,
        follow=follow,
    )


def add_analytics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--top-n", type=int, default=10, help="ranks per day/week (default 10)")
    p.add_argument(
        "--exclude-bots",
        action="store_true",
        help="also build human-only *_humans variants of the top-IP tables",
    )
    p.add_argument(
        "--latency-min-hits",
        type=int,
        default=20,
        metavar="N",
        help="daily_latency: timed requests a path needs in a day to rank as slow (default 20)",
    )


def cmd_ingest(a: argparse.Namespace) -> int:
    from logberg.pipeline.ingest.batch import ingest

    cfg = ingest_config(a, follow_config(a))
    spark = session("logberg-ingest" if cfg.follow is None else "logberg-ingest-follow")
    if cfg.follow is None:
        print(ingest(spark, cfg).summary(), flush=True)
        return 0
    from logberg.pipeline.analytics import AnalyticsConfig, analytics
    from logberg.pipeline.ingest.batch import IngestResult
    from logberg.pipeline.ingest.stream import follow

    def committed(batch_id: int, result: IngestResult) -> None:
        print(f"stream batch {batch_id} committed: {result.summary()}", flush=True)

    def refresh(s: SparkSession) -> None:
        print(analytics(s, AnalyticsConfig()).summary(), flush=True)

    follow(spark, cfg, committed, refresh)
    return 0


def analytics_config(a: argparse.Namespace) -> AnalyticsConfig:
    from logberg.pipeline.analytics import AnalyticsConfig

    return AnalyticsConfig(
        top_n=a.top_n,
        since=getattr(a, "analytics_since", None),
        dates=tuple(getattr(a, "dates", None) or ()),
        exclude_bots=a.exclude_bots,
        full=getattr(a, "analytics_full", False),
        latency_min_hits=a.latency_min_hits,
    )


def cmd_analytics(a: argparse.Namespace) -> int:
    from logberg.pipeline.analytics import analytics

    print(analytics(session("logberg-analytics"), analytics_config(a)).summary(), flush=True)
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    from logberg.pipeline.run import run

    ingested, analysed = run(session("logberg-run"), ingest_config(a), analytics_config(a))
    print(ingested.summary(), flush=True)
    print(analysed.summary(), flush=True)
    return 0


def cmd_maintain(a: argparse.Namespace) -> int:
    from logberg.pipeline.maintenance import MaintainConfig, maintain, table_name

    cfg = MaintainConfig(
        tables=tuple(table_name(t, "--table") for t in a.table),
        strategy=a.strategy,
        target_file_size_mb=a.target_file_size_mb,
        min_input_files=a.min_input_files,
        max_files_per_run=a.max_files_per_run,
        max_file_group_mb=a.max_file_group_mb,
        retention_days=a.retention_days,
        retain_last=a.retain_last,
        orphan_margin_days=a.orphan_margin_days,
        max_retries=a.max_retries,
    )
    reports = maintain(session("logberg-maintain"), cfg)
    for r in reports:
        print(r.line(), flush=True)
    return 0 if all(r.status == "ok" for r in reports) else 1


def cmd_rollback(a: argparse.Namespace) -> int:
    from logberg.pipeline.maintenance import table_name
    from logberg.pipeline.rollback import RollbackConfig, parse_timestamp, rollback

    cfg = RollbackConfig(
        table=table_name(a.table, "TABLE"),
        snapshot_id=a.to,
        timestamp=parse_timestamp(a.to_timestamp) if a.to_timestamp else None,
    )
    print(rollback(session("logberg-rollback"), cfg).summary())
    return 0


# ---- the local Kubernetes cluster ---------------------------------------------------------


def cmd_cluster(a: argparse.Namespace) -> int:
    from logberg_platform.cluster import lifecycle
    from logberg_platform.cluster.settings import ClusterSettings

    def progress(msg: str) -> None:
        print(msg, flush=True)

    s = ClusterSettings.from_env()
    if a.action == "up":
        lifecycle.up(s, progress)
    elif a.action == "down":
        return 1 if lifecycle.down(s, progress, purge=a.purge) else 0
    elif a.action == "status":
        print(lifecycle.status(s))
    elif a.action == "load":
        if not a.images:
            raise ConfigError("cluster load: name at least one image (name:tag)")
        lifecycle.load(s, a.images, progress)
    else:
        print(lifecycle.env_lines(s))
    return 0


# ---- Kubernetes (kind, EKS, the local cluster) --------------------------------------------


def k8s_target(a: argparse.Namespace) -> Kube:
    from logberg_platform.k8s.kube import Kube, Target

    return Kube(Target(namespace=a.namespace, context=a.context, kubeconfig=a.kubeconfig))


def cmd_k8s(a: argparse.Namespace) -> int:
    def say(msg: str) -> None:
        print(msg, flush=True)

    if a.action == "deploy":
        return k8s_deploy(a, say)
    if a.action in ("submit", "status", "logs", "sql"):
        return k8s_jobs(a, say)
    from logberg_platform.k8s.apps import wait_app

    kube = k8s_target(a)
    if a.kind == "app":
        if not a.name:
            raise ConfigError("wait app: name the SparkApplication")
        kube.require_crd()
        st = wait_app(kube, a.name, a.timeout, say)
        say(f"SparkApplication {a.name}: {st.state} (attempts {st.attempts})")
    else:
        from logberg_platform.k8s.kube import wait

        if bool(a.name) == bool(a.selector):
            raise ConfigError("wait job: give a NAME or --selector, not both")
        what = f"Job {a.name}" if a.name else f"the Jobs matching {a.selector}"
        done = (lambda: kube.job_done(a.name)) if a.name else (lambda: kube.jobs_done(a.selector))
        took = wait(what, done, a.timeout)
        say(f"{what}: complete (waited {took:.0f}s)")
    return 0


def k8s_jobs(a: argparse.Namespace, say: Callable[[str], None]) -> int:
    """submit, status, logs and sql: the jobs of an installed release."""
    from logberg.output import write_rows
    from logberg_platform.k8s import submit

    kube = k8s_target(a)
    if a.action == "status":
        header = ["NAME", "STATE", "ATTEMPTS", "START", "DURATION", "DRIVER"]
        write_rows(header, submit.status_rows(kube), "table", sys.stdout)
        return 0
    if a.action == "logs":
        submit.stream_log(kube, submit.pod_of(kube, a.app, a.executor), a.follow, sys.stdout)
        return 0
    if a.action == "sql":
        pod = submit.toolbox_pod(kube, a.release)
        if sys.stdin.isatty() and sys.stdout.isatty():
            return submit.sql_terminal(kube, pod)
        return submit.sql_piped(kube, pod, sys.stdin.read(), sys.stdout, sys.stderr)
    job_args = list(a.job_args)
    template = submit.templates(kube, a.release).get(a.job)
    if template is None:
        raise ConfigError(f"the release {a.release!r} has no {a.job} application (chart too old?)")
    name = submit.unique_name(a.release, a.job)
    submit.create(kube, submit.application(template, a.release, a.job, job_args, name))
    say(f"SparkApplication {name} created in namespace {kube.ns}")
    if not (a.wait or a.follow_logs):
        return 0
    try:
        st = submit.follow(kube, name, a.timeout, sys.stdout, logs=a.follow_logs)
    except KeyboardInterrupt:
        submit.interrupted(kube, name, input if sys.stdin.isatty() else lambda _: "", say)
        return 130
    say(f"SparkApplication {name}: {st.state} (attempts {st.attempts})")
    return 0


def k8s_deploy(a: argparse.Namespace, say: Callable[[str], None]) -> int:
    from pathlib import Path

    from logberg_platform.build import images, tools
    from logberg_platform.k8s import deploy
    from logberg_platform.settings import LocalSettings
    from logberg.versions import pins

    given = dict(kv.split("=", 1) for kv in a.image)
    unknown = set(given) - set(deploy.IMAGES)
    if unknown:
        raise ConfigError(f"--image {sorted(unknown)}: expected keys {', '.join(deploy.IMAGES)}")
    refs = {k: given.get(k) or images.current_tag(k) for k in deploy.IMAGES}
    values: dict[str, list[Path]] = {}
    for kv in a.values:
        release, _, path = kv.partition("=")
        values.setdefault(release, []).append(Path(path))
    local = LocalSettings.from_env()
    s = deploy.DeploySettings(
        target=a.target,
        namespace=a.namespace,
        operator_namespace=a.operator_namespace,
        repo=images.repo_root(),
        chart_cache=local.tools / "charts",
        operator_chart_version=pins().spark_operator_chart,
        images=refs,
        helm=a.helm,
        kubectl=a.kubectl,
        context=a.context,
        kubeconfig=a.kubeconfig,
        operator_image=a.operator_image,
        image_registry=a.image_registry,
        values=values,
        timeout=a.timeout,
        metastore_namespace=a.metastore_namespace,
    )
    version = images.logberg_version()
    if a.target == "local":
        load = deploy.local_loader(version, say)
    elif a.target == "kind":
        load = deploy.kind_loader(a.kind_cluster, version, say)
    else:

        def load(refs: list[str]) -> None:
            return None

    deploy.deploy(s, k8s_target(a), load, lambda: tools.go(local.tools), say)
    return 0


# ---- setup (build tooling; never reached by a job) ----------------------------------------


def cmd_images(a: argparse.Namespace) -> int:
    from logberg_platform.build import images

    return images.run(a)


def cmd_setup(a: argparse.Namespace) -> int:
    from logberg_platform.settings import LocalSettings

    s = LocalSettings.from_env()
    if a.what == "jars":
        from logberg_platform.build import jars

        print(f"JVM artifacts ready under {jars.resolve(s)}")
    elif a.what == "cds":
        from logberg_platform.build import cds

        print(f"class archive ready: {cds.build(s)}")
    elif a.what == "kubernetes":
        from logberg_platform.build import kube

        found = kube.ensure_binaries(s.tools, lambda msg: print(msg, flush=True))
        print(f"kubernetes binaries: {found.kube_bin}\ncoredns: {found.coredns}")
    else:
        from logberg_platform.build import tools

        names = a.names or ["versitygw", "helm"]
        for line in tools.ensure(s.tools, [n for n in names if n != "spark-operator-chart"]):
            print(line)
        if "spark-operator-chart" in names:  # what `k8s deploy` installs, cached by version
            from logberg_platform.k8s import operator_chart
            from logberg.versions import pins

            helm, _ = tools.ensure_helm_kubectl(s.tools)
            chart = operator_chart.ensure(
                s.tools / "charts",
                pins().spark_operator_chart,
                str(helm),
                lambda: tools.go(s.tools),
            )
            print(f"spark-operator chart: {chart}")
    return 0


# ---- the tree -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="logberg", description="nginx access logs into an Apache Iceberg lakehouse"
    )
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=os.environ.get("LOGBERG_LOG_FORMAT", "text"),
        help="stderr log lines for people (text) or collectors (json); env LOGBERG_LOG_FORMAT",
    )
    p.add_argument(
        "--log-level",
        default=os.environ.get("LOGBERG_LOG_LEVEL_PY", "INFO"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logberg's own log level (Spark's: LOGBERG_LOG_LEVEL)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, handler: Handler | None, help_text: str, add_help: bool = True
    ) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text, description=help_text, add_help=add_help)
        sp.set_defaults(handler=handler)
        return sp

    lp = command("local", cmd_local, "start, stop or inspect the local metastore and S3 server")
    lp.add_argument("action", choices=["up", "down", "status"])
    lp.add_argument("--s3", action="store_true", help="also start the local S3-compatible server")

    command(
        "sql",
        None,
        "the spark-sql shell through the metastore (-e/-f pass through)",
        add_help=False,
    )

    qp = command("query", cmd_query, "run one SQL statement and print the rows")
    qp.add_argument("sql")
    qp.add_argument("--format", choices=["table", "csv", "jsonl"], default="table")
    qp.add_argument(
        "--as-of",
        metavar="SNAPSHOT|TS",
        help="time travel: a snapshot id or an ISO timestamp (every nginx_logs table)",
    )
    command("top", cmd_top, "print the newest day's top IPs and devices and the weekly summary")

    rep = command("report", cmd_report, "write a self-contained HTML report of the gold tables")
    rep.add_argument(
        "--since",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="first day (default: 27 days before --until, or the oldest analysed day)",
    )
    rep.add_argument(
        "--until",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="last day (default: the newest analysed day)",
    )
    rep.add_argument(
        "--output",
        metavar="PATH|URI",
        help="a path, file:// or s3a:// URI (default: <warehouse>/reports/logberg-report.html)",
    )

    from logberg_platform import doctor  # cheap to import: psycopg2 and boto3 load on use

    doctor.add_arguments(command("doctor", doctor.run, "check the lakehouse; say what to fix"))

    wp = command(
        "wait-ready",
        cmd_wait_ready,
        "wait until the metastore answers and the warehouse (and --input) buckets exist",
    )
    wp.add_argument(
        "--input", action="append", default=[], metavar="URI", help="also this bucket (repeatable)"
    )
    wp.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    wp.add_argument("--interval", type=float, default=2.0, help="seconds between checks")

    command("generate", None, "generate nginx logs with a ground-truth manifest", add_help=False)

    ip = command("ingest", cmd_ingest, "ingest raw logs into nginx_logs.access_logs")
    add_ingest_args(ip)
    add_follow_args(ip)

    ap = command("analytics", cmd_analytics, "build the daily/weekly top tables")
    g = ap.add_mutually_exclusive_group()
    g.add_argument(
        "--since",
        dest="analytics_since",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="recompute every day from DATE on (and their weeks)",
    )
    g.add_argument(
        "--dates",
        type=dt.date.fromisoformat,
        nargs="+",
        metavar="DATE",
        help="recompute exactly these days (and their weeks)",
    )
    g.add_argument("--full", dest="analytics_full", action="store_true", help="recompute every day")
    add_analytics_options(ap)

    rp = command("run", cmd_run, "ingest, then analytics for the days it touched")
    add_ingest_args(rp)
    add_analytics_options(rp)

    mp = command("maintain", cmd_maintain, "compact, expire snapshots, remove orphan files")
    mp.add_argument(
        "--table",
        action="append",
        default=[],
        help="only this table (repeatable; default: every Iceberg table in nginx_logs)",
    )
    mp.add_argument("--strategy", choices=["binpack", "sort"], default="binpack")
    mp.add_argument("--target-file-size-mb", type=int, default=128)
    mp.add_argument(
        "--min-input-files",
        type=int,
        default=5,
        help="compact a partition only when it has at least this many small files",
    )
    mp.add_argument(
        "--max-files-per-run",
        type=int,
        default=5000,
        help="bound on data files rewritten per table per run (fits a schedule)",
    )
    mp.add_argument(
        "--max-file-group-mb",
        type=int,
        default=1024,
        help="input bytes per rewrite group; each group commits on its own",
    )
    mp.add_argument("--retention-days", type=float, default=7.0)
    mp.add_argument("--retain-last", type=int, default=5, help="snapshots always kept")
    mp.add_argument(
        "--orphan-margin-days",
        type=float,
        default=3.0,
        help="only remove unreferenced files older than this (at least 3)",
    )
    mp.add_argument("--max-retries", type=int, default=3, help="retries after a commit conflict")

    bp = command("rollback", cmd_rollback, "make an earlier snapshot of a table current")
    bp.add_argument("table", help="e.g. access_logs or nginx_logs.access_logs")
    to = bp.add_mutually_exclusive_group(required=True)
    to.add_argument("--to", type=int, metavar="SNAPSHOT_ID", help="rollback_to_snapshot")
    to.add_argument("--to-timestamp", metavar="TS", help="rollback_to_timestamp (ISO, UTC)")

    cp = command(
        "cluster",
        cmd_cluster,
        "the local single-node Kubernetes cluster (root; settings LOGBERG_CLUSTER_*)",
    )
    cp.add_argument(
        "action",
        choices=["up", "down", "status", "load", "kubeconfig"],
        help="up: build if needed, start, wait until ready (idempotent); down: stop and undo "
        "every host change; load: import podman images into the node; kubeconfig: print "
        "KUBECONFIG and PATH lines for eval",
    )
    cp.add_argument("images", nargs="*", help="load: name:tag ...")
    cp.add_argument("--purge", action="store_true", help="down: also delete the cluster home")

    kp = command(
        "k8s",
        cmd_k8s,
        "logberg on a Kubernetes cluster: deploy the charts in order, wait for jobs",
    )
    kp.add_argument(
        "--context",
        default=os.environ.get("K8S_CONTEXT") or None,
        help="kubeconfig context (env K8S_CONTEXT; default: the current one)",
    )
    kp.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG") or None,
        help="kubeconfig file (env KUBECONFIG; default ~/.kube/config)",
    )
    kp.add_argument(
        "--namespace",
        "-n",
        default=os.environ.get("K8S_NAMESPACE", "logberg"),
        help="namespace of the logberg releases (env K8S_NAMESPACE; default logberg)",
    )
    ksub = kp.add_subparsers(dest="action", required=True, metavar="ACTION")
    dp = ksub.add_parser(
        "deploy",
        help="images, dev backends, spark-operator (CRDs first), hive-metastore "
        "(+ helm test), logberg: in order, each waiting on what it needs",
    )
    dp.add_argument("--target", choices=["local", "kind", "eks"], default="local")
    dp.add_argument("--operator-namespace", default="spark-operator")
    dp.add_argument(
        "--metastore-namespace",
        default="",
        help="the metastore's namespace (default: --namespace; EKS keeps it apart)",
    )
    dp.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="KEY=REF",
        help="an image's name:tag (default: the tag `logberg images tag KEY` prints)",
    )
    dp.add_argument(
        "--operator-image",
        choices=["local", "upstream"],
        default="local",
        help="images/spark-operator (our Spark; default), or the chart's upstream image",
    )
    dp.add_argument("--image-registry", default="", help="EKS: the registry the images are in")
    dp.add_argument(
        "--values",
        action="append",
        default=[],
        metavar="RELEASE=FILE",
        help="extra values for a release (logberg, hive-metastore, logberg-dev, spark-operator)",
    )
    dp.add_argument("--kind-cluster", default="logberg", help="kind: the cluster's name")
    dp.add_argument("--helm", default="helm")
    dp.add_argument("--kubectl", default="kubectl")
    dp.add_argument("--timeout", type=float, default=900.0, help="per release, seconds")
    sbp = ksub.add_parser(
        "submit",
        help="create a SparkApplication from the installed chart's spec (a fresh name), "
        "optionally follow it",
        usage="logberg k8s submit [options] {ingest,analytics,maintain,generate,report} "
        "[-- ARGS...]",
        epilog="ARGS after `--` are appended to the job's own arguments, e.g. "
        "`logberg k8s submit ingest --wait -- --full`.",
    )
    sbp.set_defaults(job_args=[])
    sbp.add_argument("job", choices=["ingest", "analytics", "maintain", "generate", "report"])
    sbp.add_argument("--release", default="logberg", help="the logberg release (default logberg)")
    sbp.add_argument(
        "--wait", action="store_true", help="follow it; exit 0 on COMPLETED, non-zero on a failure"
    )
    sbp.add_argument(
        "--follow-logs", action="store_true", help="with --wait: stream the driver's log"
    )
    sbp.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")
    ksub.add_parser("status", help="every SparkApplication: state, attempts, start, duration")
    lgp = ksub.add_parser("logs", help="an application's driver (or executor) log")
    lgp.add_argument("app")
    lgp.add_argument("--executor", type=int, metavar="N", help="executor N's log instead")
    lgp.add_argument("--follow", "-f", action="store_true")
    sqp = ksub.add_parser(
        "sql",
        help="spark-sql in the release's toolbox pod: a terminal session, or SQL from stdin",
    )
    sqp.add_argument("--release", default="logberg")
    wtp = ksub.add_parser("wait", help="wait for a SparkApplication or a Job to finish")
    wtp.add_argument("kind", choices=["app", "job"])
    wtp.add_argument("name", nargs="?", help="the SparkApplication or Job")
    wtp.add_argument("--selector", "-l", help="job: every Job with these labels")
    wtp.add_argument("--timeout", type=float, default=1800.0)

    from logberg_platform.build import images  # stdlib only: cheap to import for --help

    ip = command(
        "images",
        cmd_images,
        "build, tag and save the container images (docker buildx or podman; images/README.md)",
    )
    images.add_arguments(ip)

    sp = command("setup", cmd_setup, "build what local runs need (make setup runs these)")
    sp.add_argument("what", choices=["jars", "cds", "tools", "kubernetes"])
    sp.add_argument(
        "names",
        nargs="*",
        help="tools: versitygw, helm, spark-operator-chart (default: versitygw and helm)",
    )
    return p


# Commands whose arguments another program parses (spark-sql; the generator's own CLI,
# also `python -m generator`, with its one-line errors). They come first on the line.
PASS_THROUGH = ("sql", "generate")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if argv and argv[0] in PASS_THROUGH:  # logging settings from the environment
            defaults = parser.parse_args(["top"])
            configure_logging(defaults.log_format, defaults.log_level)
            if argv[0] == "sql":
                return cmd_sql(argv[1:])
            from generator.cli import main as generate

            return generate(argv[1:])
        # `logberg k8s submit JOB [options] -- ARGS`: what follows `--` is the job's own.
        job_args = argv[argv.index("--") + 1 :] if "--" in argv else None
        a = parser.parse_args(argv if job_args is None else argv[: argv.index("--")])
        if job_args is not None:
            if not hasattr(a, "job_args"):
                parser.error("`--` only goes with `logberg k8s submit JOB ... -- ARGS`")
            a.job_args = job_args
        configure_logging(a.log_format, a.log_level)
        handler: Handler = a.handler
        return handler(a)
    except (ConfigError, ServiceError) as e:
        print(f"logberg: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
