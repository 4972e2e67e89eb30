"""The jobs of an installed release: `logberg k8s submit | status | logs`."""

from __future__ import annotations

import argparse
import sys

from logberg.cli.command import action
from logberg.errors import ConfigError
from logberg_platform.cli.k8s import say, target

JOBS = ["ingest", "analytics", "maintain", "generate", "report"]


def submit(a: argparse.Namespace) -> int:
    from logberg_platform.k8s import submit as k8s_submit

    kube = target(a)
    template = k8s_submit.templates(kube, a.release).get(a.job)
    if template is None:
        raise ConfigError(f"the release {a.release!r} has no {a.job} application (chart too old?)")
    name = k8s_submit.unique_name(a.release, a.job)
    app = k8s_submit.application(template, a.release, a.job, list(a.job_args), name)
    k8s_submit.create(kube, app)
    say(f"SparkApplication {name} created in namespace {kube.ns}")
    if not (a.wait or a.follow_logs):
        return 0
    try:
        st = k8s_submit.follow(kube, name, a.timeout, sys.stdout, logs=a.follow_logs)
    except KeyboardInterrupt:
        k8s_submit.interrupted(kube, name, input if sys.stdin.isatty() else lambda _: "", say)
        return 130
    say(f"SparkApplication {name}: {st.state} (attempts {st.attempts})")
    return 0


def status(a: argparse.Namespace) -> int:
    from logberg.output import write_rows
    from logberg_platform.k8s import submit as k8s_submit

    header = ["NAME", "STATE", "ATTEMPTS", "START", "DURATION", "DRIVER"]
    write_rows(header, k8s_submit.status_rows(target(a)), "table", sys.stdout)
    return 0


def logs(a: argparse.Namespace) -> int:
    from logberg_platform.k8s import submit as k8s_submit

    kube = target(a)
    k8s_submit.stream_log(kube, k8s_submit.pod_of(kube, a.app, a.executor), a.follow, sys.stdout)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        help="create a SparkApplication from the installed chart's spec (a fresh name), "
        "optionally follow it",
        usage="logberg k8s submit [options] {ingest,analytics,maintain,generate,report} "
        "[-- ARGS...]",
        epilog="ARGS after `--` are appended to the job's own arguments, e.g. "
        "`logberg k8s submit ingest --wait -- --full`.",
    )
    p.set_defaults(handler=submit, job_args=[])
    p.add_argument("job", choices=JOBS)
    p.add_argument("--release", default="logberg", help="the logberg release (default logberg)")
    p.add_argument(
        "--wait", action="store_true", help="follow it; exit 0 on COMPLETED, non-zero on a failure"
    )
    p.add_argument(
        "--follow-logs", action="store_true", help="with --wait: stream the driver's log"
    )
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")

    action(sub, "status", status, "every SparkApplication: state, attempts, start, duration")

    lg = action(sub, "logs", logs, "an application's driver (or executor) log")
    lg.add_argument("app")
    lg.add_argument("--executor", type=int, metavar="N", help="executor N's log instead")
    lg.add_argument("--follow", "-f", action="store_true")
