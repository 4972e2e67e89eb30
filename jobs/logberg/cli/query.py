"""`logberg query SQL`: one statement, only the rows on stdout (for scripts)."""

from __future__ import annotations

import argparse
import sys

from logberg.cli.command import Command
from logberg.cli.spark import session


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sql")
    p.add_argument("--format", choices=["table", "csv", "jsonl"], default="table")
    p.add_argument(
        "--as-of",
        metavar="SNAPSHOT|TS",
        help="time travel: a snapshot id or an ISO timestamp (every nginx_logs table)",
    )


def run(a: argparse.Namespace) -> int:
    from logberg.output import write_rows
    from logberg.pipeline.query import query

    columns, rows = query(session("logberg-query"), a.sql, a.as_of)
    write_rows(columns, rows, a.format, sys.stdout)
    return 0


COMMAND = Command("query", "run one SQL statement and print the rows", run, arguments, order=21)
