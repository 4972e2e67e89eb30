"""`logberg rollback TABLE`: make an earlier snapshot current."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command
from logberg.cli.spark import session


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", help="e.g. access_logs or nginx_logs.access_logs")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to", type=int, metavar="SNAPSHOT_ID", help="rollback_to_snapshot")
    to.add_argument("--to-timestamp", metavar="TS", help="rollback_to_timestamp (ISO, UTC)")


def run(a: argparse.Namespace) -> int:
    from logberg.pipeline.maintenance import table_name
    from logberg.pipeline.rollback import RollbackConfig, parse_timestamp, rollback

    cfg = RollbackConfig(
        table=table_name(a.table, "TABLE"),
        snapshot_id=a.to,
        timestamp=parse_timestamp(a.to_timestamp) if a.to_timestamp else None,
    )
    print(rollback(session("logberg-rollback"), cfg).summary())
    return 0


COMMAND = Command(
    "rollback", "make an earlier snapshot of a table current", run, arguments, order=44
)
