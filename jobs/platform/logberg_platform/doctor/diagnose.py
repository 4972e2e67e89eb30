"""The platform's `logberg doctor`: the runtime's checks with the local platform's hints and
its metastore database's checks, or (`--k8s`) a release on a cluster."""

from __future__ import annotations

import argparse
import os

from logberg.cli import doctor as runtime_doctor
from logberg.doctor.checks import diagnose as runtime_diagnose
from logberg.doctor.checks import report
from logberg.doctor.results import CheckResult, Status, failed, ok
from logberg.errors import ConfigError
from logberg_platform.doctor.database_checks import (
    check_database,
    check_lock_tables,
    check_schema_version,
)
from logberg_platform.doctor.local_context import LocalContext, LocalHints
from logberg_platform.local_settings import LocalSettings


def diagnose(settings: LocalSettings | None = None, timeout: float = 10.0) -> list[CheckResult]:
    """Every check, in order, on this environment's settings (LOGBERG_* over the home's)."""
    from logberg_platform import local

    try:
        s = settings or LocalSettings.from_env()
        cfg = local.lakehouse_config(s)
    except ConfigError as e:
        return [failed("settings", str(e), "correct the setting named")]
    cluster = os.environ.get("LOGBERG_PROFILE") == "cluster"
    ctx = LocalContext(
        config=cfg, timeout=timeout, cluster=cluster, hints=LocalHints(s), settings=s
    )
    database = [
        ("database", lambda _: check_database(ctx)),
        ("schema version", lambda _: check_schema_version(ctx)),
        ("lock tables", lambda _: check_lock_tables(ctx)),
    ]
    try:
        return [*runtime_diagnose(ctx, database), *check_kafka(s, timeout)]
    finally:
        if ctx.db_conn is not None:
            ctx.db_conn.close()


def check_kafka(s: LocalSettings, timeout: float) -> list[CheckResult]:
    """The Kafka broker, when one is configured (LOGBERG_KAFKA_BOOTSTRAP, or this home's
    broker runs): it answers a metadata request. No result when none is."""
    from logberg.lakehouse.kafka import BOOTSTRAP_ENV, cluster_answers
    from logberg_platform import kafka_broker

    local = kafka_broker.served(s)
    bootstrap = os.environ.get(BOOTSTRAP_ENV) or (local.bootstrap if local else None)
    if bootstrap is None:
        if kafka_broker.service(s).pid() is None:
            return []
        return [
            failed(
                "kafka",
                "this home's broker runs but says nowhere where it listens",
                f"`logberg local down`, then `logberg local up --kafka` ({s.home})",
            )
        ]
    setting = BOOTSTRAP_ENV if os.environ.get(BOOTSTRAP_ENV) else "the local broker"
    if cluster_answers(bootstrap, timeout):
        return [ok("kafka", f"the broker at {bootstrap} answers ({setting})")]
    log = f"; its log: {kafka_broker.service(s).log_file}" if local else ""
    return [
        failed(
            "kafka",
            f"the Kafka broker at {bootstrap} ({setting}) does not answer{log}",
            f"start it (`logberg local up --kafka`) or correct {BOOTSTRAP_ENV}",
        )
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    runtime_doctor.arguments(parser)
    k = parser.add_argument_group("on a cluster (--k8s)")
    k.add_argument(
        "--k8s",
        action="store_true",
        help="check the release on a cluster: the operator and the metastore through the API, "
        "then these checks inside the release's toolbox pod",
    )
    k.add_argument("--context", default=os.environ.get("K8S_CONTEXT") or None)
    k.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None)
    k.add_argument("--namespace", default=os.environ.get("K8S_NAMESPACE", "logberg"))
    k.add_argument("--release", default="logberg")
    k.add_argument("--operator-release", default="spark-operator")


def on_cluster(args: argparse.Namespace) -> list[CheckResult]:
    """`--k8s`: the API's view, then `logberg doctor` in the toolbox pod."""
    from logberg_platform.k8s import health, submit
    from logberg_platform.k8s.api_client import Kube, Target

    kube = Kube(Target(namespace=args.namespace, context=args.context, kubeconfig=args.kubeconfig))
    found = health.api_checks(kube, args.release, args.operator_release)
    try:
        found += health.inside(kube, submit.toolbox_pod(kube, args.release))
    except ConfigError as e:
        found.append({"name": "toolbox", "status": "failed", "detail": str(e), "fix": ""})
    return [CheckResult(r["name"], Status(r["status"]), r["detail"], r["fix"]) for r in found]


def run(args: argparse.Namespace) -> int:
    """Run every check and print the results; 0 when none failed, else 1."""
    results = on_cluster(args) if args.k8s else diagnose(timeout=args.timeout)
    return report(results, args.format)
