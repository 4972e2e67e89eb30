"""`logberg doctor`: the lakehouse's checks where this runs (in a cluster pod too). The
platform tooling's `doctor` extends it (the local database, `--k8s`) when installed."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="one line per check and a summary (text), or one JSON document (json)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="for each network call (default 10)",
    )


def run(a: argparse.Namespace) -> int:
    from logberg.doctor.checks import diagnose, report
    from logberg.doctor.results import Context, failed
    from logberg.errors import ConfigError
    from logberg.lakehouse import environment

    try:
        cfg = environment.current().lakehouse_config()
    except ConfigError as e:
        return report([failed("settings", str(e), "correct the setting named")], a.format)
    ctx = Context(config=cfg, timeout=a.timeout, cluster=environment.in_cluster())
    return report(diagnose(ctx), a.format)


COMMAND = Command("doctor", "check the lakehouse; say what to fix", run, arguments, order=24)
