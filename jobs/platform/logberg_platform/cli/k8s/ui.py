"""`logberg k8s ui [APP]`: a port on 127.0.0.1 to a Spark UI of the release, until Ctrl-C.

No APP: the History Server, and the applications it lists. APP (a SparkApplication): its
live driver's UI while the driver runs, else its pages on the History Server.
"""

from __future__ import annotations

import argparse
import signal
import threading

from logberg.cli.command import action
from logberg_platform.cli.k8s import say, target


def run(a: argparse.Namespace) -> int:
    from logberg_platform import history
    from logberg_platform.cli.ui import lines
    from logberg_platform.k8s import ui
    from logberg_platform.k8s.connect import PortForward

    kube = target(a)
    where = ui.resolve(kube, a.release, a.app)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # either ends the forward, and exits 0
        signal.signal(sig, lambda *_: stop.set())
    with PortForward(kube, where.pod, where.port, local_port=a.port) as pf:
        base = f"http://127.0.0.1:{pf.port}"
        say(f"{where.what} (pod {where.pod}): {base}{where.path}")
        if a.app is None:
            say("\n".join(lines(base, history.applications(base, a.limit))[1:]))
        say("Ctrl-C stops the port-forward")
        while not stop.wait(1.0):  # wakes for the signal handlers
            pass
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = action(
        sub,
        "ui",
        run,
        "forward a local port to a Spark UI: the History Server, or APP's live driver "
        "(its History Server pages once the driver is gone)",
    )
    p.add_argument("app", nargs="?", help="a SparkApplication (default: the History Server)")
    p.add_argument("--release", default="logberg", help="the logberg release (default logberg)")
    p.add_argument("--port", type=int, default=0, help="local port (default: a free one)")
    p.add_argument("--limit", type=int, default=10, help="applications listed, newest first (10)")
