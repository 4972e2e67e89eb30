"""The `logberg` command line, assembled.

Each command is its own module here (the runtime: the jobs, SQL, the report, the generator)
or in the platform tooling's logberg_platform.cli (the local platform, the kind cluster,
images, the deploy flow, doctor, k8s), which joins through the `logberg.commands` entry
points when it is installed. This file only puts them in one tree and runs the handler.
Logging goes to stderr (`--log-format json` for clusters); results go to stdout. The same
commands run as SparkApplications (jobs/spark_entry.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from importlib import import_module
from importlib.metadata import entry_points

from logberg.cli.command import Command, Handler
from logberg.cli.logs import configure_logging
from logberg.errors import ConfigError, QueryError, ServiceError
from logberg.lakehouse.kafka_options import known_secrets, mask

RUNTIME = (
    "sql",
    "query",
    "top",
    "report",
    "doctor",
    "wait_ready",
    "generate",
    "ingest",
    "kafka",
    "analytics",
    "run",
    "maintain",
    "rollback",
)
PLUGINS = "logberg.commands"  # the platform tooling's commands (jobs/platform/pyproject.toml)


def commands() -> list[Command]:
    """The runtime's commands, then the platform's; a platform command of the same name
    extends the runtime's and takes its place (`doctor`: the local database, `--k8s`)."""
    found = {c.name: c for c in (import_module(f"logberg.cli.{n}").COMMAND for n in RUNTIME)}
    joined = [entry.load() for entry in entry_points(group=PLUGINS)]
    names = [c.name for c in joined]
    if len(set(names)) != len(names):
        raise ConfigError(f"two platform commands share a name: {sorted(names)}")
    found.update((c.name, c) for c in joined)
    return sorted(found.values(), key=lambda c: c.order)


def build_parser(found: Sequence[Command] | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="logberg", description="nginx access logs into an Apache Iceberg lakehouse"
    )
    p.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=os.environ.get("LOGBERG_LOG_FORMAT", "text"),
        help="stderr log lines for people (text) or collectors (json); env LOGBERG_LOG_FORMAT",
    )
    p.add_argument(
        "--log-level",
        default=os.environ.get("LOGBERG_LOG_LEVEL_PY", "INFO"),
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logberg's own log level (Spark's: LOGBERG_LOG_LEVEL)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for c in commands() if found is None else found:
        sp = sub.add_parser(c.name, help=c.help, description=c.help, add_help=c.passthrough is None)
        sp.set_defaults(handler=c.handler)
        c.arguments(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        found = commands()
        parser = build_parser(found)
        passthrough = {c.name: c.passthrough for c in found if c.passthrough}
        if argv and argv[0] in passthrough:  # logging settings from the environment
            defaults = parser.parse_args(["top"])
            configure_logging(defaults.log_format, defaults.log_level)
            return passthrough[argv[0]](argv[1:])
        # `logberg k8s submit JOB [options] -- ARGS`: what follows `--` is the job's own.
        job_args = argv[argv.index("--") + 1 :] if "--" in argv else None
        a = parser.parse_args(argv if job_args is None else argv[: argv.index("--")])
        if job_args is not None:
            if not hasattr(a, "job_args"):
                parser.error("`--` only goes with `logberg k8s submit JOB ... -- ARGS`")
            a.job_args = job_args
        configure_logging(a.log_format, a.log_level)
        handler: Handler = a.handler
        return handler(a)
    except (ConfigError, ServiceError) as e:
        print(f"logberg: error: {mask(str(e))}", file=sys.stderr)
        return 2
    except QueryError as e:
        print(f"logberg: error: {mask(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        from logberg.lakehouse.connect import server_failure

        message = server_failure(e)  # the Spark Connect server failed: name it and its log
        if message is not None:
            print(f"logberg: error: {mask(message)}", file=sys.stderr)
            return 2
        if not known_secrets():
            raise
        # Python's own report of an error nobody handled, its exit code, secrets masked.
        print(mask(traceback.format_exc()), end="", file=sys.stderr)
        return 1
