"""`logberg report`: one self-contained HTML page of the gold tables."""

from __future__ import annotations

import argparse
import datetime as dt

from logberg.cli.command import Command, config_from
from logberg.cli.spark import session


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--since",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="first day (default: 27 days before --until, or the oldest analysed day)",
    )
    p.add_argument(
        "--until",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="last day (default: the newest analysed day)",
    )
    p.add_argument(
        "--output",
        metavar="PATH|URI",
        help="a path, file:// or s3a:// URI (default: <warehouse>/reports/logberg-report.html)",
    )


def run(a: argparse.Namespace) -> int:
    from logberg.lakehouse import environment
    from logberg.pipeline.report.data import ReportConfig
    from logberg.pipeline.report.run import report

    cfg = config_from(ReportConfig, a)  # a wrong option fails before Spark starts
    warehouse = environment.current().lakehouse_config().warehouse
    result = report(session("logberg-report"), cfg, warehouse)
    print(result.summary(), flush=True)
    return 0


COMMAND = Command(
    "report", "write a self-contained HTML report of the gold tables", run, arguments, order=23
)
