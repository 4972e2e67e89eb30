"""`logberg k8s query SQL`: one statement's rows, as `logberg query` prints them.

Through the release's Spark Connect server when it is deployed (a warm session: no Spark
start-up), else `logberg query` in the release's toolbox pod. The log says which.
"""

from __future__ import annotations

import argparse
import logging
import sys

from logberg.cli.command import action
from logberg.cli.query import arguments as query_arguments
from logberg_platform.cli.k8s import target

# Under "logberg": the logger the command line configures (stderr, text or JSON).
log = logging.getLogger("logberg.k8s.query")


def run(a: argparse.Namespace) -> int:
    from logberg.output import write_rows
    from logberg.pipeline.query import query
    from logberg_platform.k8s import connect
    from logberg_platform.k8s import submit as k8s_submit

    kube = target(a)
    server = connect.find(kube, a.release)
    if server is not None:
        log.info("k8s query: through the Spark Connect server %s", server.name)
        with connect.session(kube, server, "logberg-k8s-query") as spark:
            columns, rows = query(spark, a.sql, a.as_of)
        write_rows(columns, rows, a.format, sys.stdout)
        return 0
    pod = k8s_submit.toolbox_pod(kube, a.release)
    log.info("k8s query: no Spark Connect server in release %s; `logberg query` in %s",
             a.release, pod)  # fmt: skip
    command = ["logberg", "query", a.sql, "--format", a.format]
    if a.as_of:
        command += ["--as-of", a.as_of]
    return k8s_submit.toolbox_piped(kube, pod, command, sys.stdout, sys.stderr)


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub,
        "query",
        run,
        "run one SQL statement and print the rows: through the release's Spark Connect "
        "server when deployed, else in its toolbox pod",
    )
    query_arguments(p)  # the local `logberg query`'s: SQL, --format, --as-of
    p.add_argument("--release", default="logberg", help="the logberg release (default logberg)")
