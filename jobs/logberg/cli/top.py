"""`logberg top`: the newest day's top IPs and devices and the weekly summary."""

from __future__ import annotations

import argparse
import sys

from logberg.cli.command import Command
from logberg.cli.spark import session


def run(a: argparse.Namespace) -> int:
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


COMMAND = Command(
    "top",
    "print the newest day's top IPs and devices and the weekly summary",
    run,
    order=22,
)
