"""The `logberg` command line. Each subcommand parses typed options and calls one module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from logberg.errors import ConfigError, ServiceError


def _cmd_local(args: argparse.Namespace) -> int:
    from logberg import local
    from logberg.settings import LocalSettings

    s = LocalSettings.from_env()
    if args.action == "up":
        for line in local.up(s, with_s3=args.s3):
            print(line)
    elif args.action == "down":
        for line in local.down(s):
            print(line)
    else:
        for st in local.status(s):
            state = f"running (pid {st.pid})" if st.running else "stopped"
            print(f"{st.name:15} {state:22} {st.where}  log: {st.log}")
    return 0


def _cmd_sql(args: argparse.Namespace, rest: list[str]) -> int:
    from logberg import sqlshell

    return sqlshell.exec_spark_sql(rest)


def _cmd_query(args: argparse.Namespace) -> int:
    from logberg import query

    return query.run(args.sql, fmt=args.format, as_of=args.as_of)


def _cmd_setup_jars(args: argparse.Namespace) -> int:
    from logberg import jars

    print(f"JVM artifacts ready under {jars.resolve()}")
    return 0


def _cmd_setup_cds(args: argparse.Namespace) -> int:
    from logberg import cds
    from logberg.settings import LocalSettings

    print(f"class archive ready: {cds.build(LocalSettings.from_env())}")
    return 0


# Subcommands whose options their own module parses, so that they run unchanged as
# SparkApplications (jobs/spark_entry.py calls the same main).
JOB_COMMANDS = {
    "generate": ("generator.cli", "generate nginx logs (see `logberg generate --help`)"),
    "ingest": ("logberg.ingest", "ingest raw logs into nginx_logs.access_logs"),
    "analytics": ("logberg.analytics", "build the daily/weekly top tables"),
    "run": ("logberg.pipeline", "ingest, then analytics"),
    "maintain": ("logberg.maintain", "compact, expire snapshots, remove orphans"),
    "rollback": ("logberg.maintain", "roll a table back to a snapshot"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="logberg",
        description="nginx access logs into an Apache Iceberg lakehouse",
    )
    sub = p.add_subparsers(dest="command", required=True)

    lp = sub.add_parser("local", help="start/stop/inspect the local metastore and S3 server")
    lp.add_argument("action", choices=["up", "down", "status"])
    lp.add_argument("--s3", action="store_true", help="also start the local S3-compatible server")

    sub.add_parser(
        "sql",
        help="the spark-sql shell through the metastore (-e/-f pass through)",
        add_help=False,
    )

    qp = sub.add_parser("query", help="run one SQL statement and print the rows")
    qp.add_argument("sql")
    qp.add_argument("--format", choices=["table", "csv", "jsonl"], default="table")
    qp.add_argument(
        "--as-of",
        dest="as_of",
        default=None,
        help="time travel: a snapshot id or a timestamp (applies to every table in the query)",
    )

    sub.add_parser("setup-jars", help="resolve the pinned JVM artifacts into .tools (make setup)")
    sub.add_parser("setup-cds", help="build the JVM class archive for local sessions (make setup)")
    for name, (_, help_text) in JOB_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in JOB_COMMANDS:
            import importlib

            module = importlib.import_module(JOB_COMMANDS[argv[0]][0])
            return int(module.main(argv[1:] if argv[0] != "rollback" else argv) or 0)
        if argv and argv[0] == "sql":
            return _cmd_sql(argparse.Namespace(), argv[1:])
        args = build_parser().parse_args(argv)
        handlers = {
            "local": _cmd_local,
            "query": _cmd_query,
            "setup-jars": _cmd_setup_jars,
            "setup-cds": _cmd_setup_cds,
        }
        return handlers[args.command](args)
    except (ConfigError, ServiceError) as e:
        print(f"logberg: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
