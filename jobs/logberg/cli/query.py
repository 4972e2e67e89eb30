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
    """On a warm server the statement goes straight to it (`connect_rows`: no session
    object, no pandas); in-process it runs in this command's own session."""
    from logberg.lakehouse import environment
    from logberg.output import write_rows
    from logberg.pipeline.query import query, with_as_of

    server = environment.current().server()
    if server is not None:
        from logberg.lakehouse.connect_rows import fetch

        columns, rows = fetch(server, with_as_of(a.sql, a.as_of) if a.as_of else a.sql)
    else:
        columns, rows = query(session("logberg-query"), a.sql, a.as_of)
    write_rows(columns, rows, a.format, sys.stdout)
    return 0


COMMAND = Command("query", "run one SQL statement and print the rows", run, arguments, order=21)
