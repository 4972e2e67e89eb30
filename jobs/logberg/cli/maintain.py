"""`logberg maintain`: compaction, snapshot expiry and orphan removal."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command, config_from
from logberg.cli.spark import session


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--table",
        dest="tables",
        action="append",
        default=[],
        help="only this table (repeatable; default: every Iceberg table in nginx_logs)",
    )
    p.add_argument("--strategy", choices=["binpack", "sort"], default="binpack")
    p.add_argument("--target-file-size-mb", type=int, default=128)
    p.add_argument(
        "--min-input-files",
        type=int,
        default=5,
        help="compact a partition only when it has at least this many small files",
    )
    p.add_argument(
        "--max-files-per-run",
        type=int,
        default=5000,
        help="bound on data files rewritten per table per run (fits a schedule)",
    )
    p.add_argument(
        "--max-file-group-mb",
        type=int,
        default=1024,
        help="input bytes per rewrite group; each group commits on its own",
    )
    p.add_argument("--retention-days", type=float, default=7.0)
    p.add_argument("--retain-last", type=int, default=5, help="snapshots always kept")
    p.add_argument(
        "--orphan-margin-days",
        type=float,
        default=3.0,
        help="only remove unreferenced files older than this (at least 3)",
    )
    p.add_argument("--max-retries", type=int, default=3, help="retries after a commit conflict")


def run(a: argparse.Namespace) -> int:
    from logberg.pipeline.maintenance import MaintainConfig, maintain, table_name

    tables = tuple(table_name(t, "--table") for t in a.tables)
    cfg = config_from(MaintainConfig, a, tables=tables)  # fails before Spark starts
    reports = maintain(session("logberg-maintain"), cfg)
    for r in reports:
        print(r.line(), flush=True)
    return 0 if all(r.status == "ok" for r in reports) else 1


COMMAND = Command(
    "maintain", "compact, expire snapshots, remove orphan files", run, arguments, order=43
)
