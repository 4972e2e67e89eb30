"""`logberg k8s sql`: SQL on the cluster, a terminal session or statements from stdin.

Through the release's Spark Connect server when it is deployed (statements from a pipe
print as `spark-sql -S` with headers does: a header line, then tab-separated rows), else
spark-sql in the release's toolbox pod. The log says which.
"""

from __future__ import annotations

import argparse
import logging
import sys

from logberg.cli.command import action
from logberg_platform.cli.k8s import target

# Under "logberg": the logger the command line configures (stderr, text or JSON).
log = logging.getLogger("logberg.k8s.sql")


def run(a: argparse.Namespace) -> int:
    from logberg_platform.k8s import connect
    from logberg_platform.k8s import submit as k8s_submit

    kube = target(a)
    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    server = connect.find(kube, a.release)
    if server is not None:
        log.info("k8s sql: through the Spark Connect server %s", server.name)
        with connect.session(kube, server, "logberg-k8s-sql") as spark:
            if terminal:
                return connect.sql_terminal(spark)
            return connect.sql_piped(spark, sys.stdin.read(), sys.stdout)
    pod = k8s_submit.toolbox_pod(kube, a.release)
    log.info("k8s sql: no Spark Connect server in release %s; spark-sql in %s", a.release, pod)
    if terminal:
        return k8s_submit.sql_terminal(kube, pod)
    return k8s_submit.sql_piped(kube, pod, sys.stdin.read(), sys.stdout, sys.stderr)


def register(sub: argparse._SubParsersAction) -> None:
    q = action(
        sub,
        "sql",
        run,
        "SQL on the cluster, a terminal session or statements from stdin: through the "
        "release's Spark Connect server when deployed, else spark-sql in its toolbox pod",
    )
    q.add_argument("--release", default="logberg", help="the logberg release (default logberg)")
