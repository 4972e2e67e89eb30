"""`logberg wait-ready`: until the metastore answers and the buckets exist (init containers)."""

from __future__ import annotations

import argparse

from logberg.cli.command import Command


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input", action="append", default=[], metavar="URI", help="also this bucket (repeatable)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between checks")


def run(a: argparse.Namespace) -> int:
    from logberg.lakehouse import environment
    from logberg.lakehouse.readiness import wait_ready

    cfg = environment.current().lakehouse_config()
    waited = wait_ready(cfg, a.input, timeout=a.timeout, interval=a.interval)
    print(
        f"ready after {waited:.0f}s: metastore {cfg.metastore_uri}, warehouse {cfg.warehouse}"
        + "".join(f", input {uri}" for uri in a.input),
        flush=True,
    )
    return 0


COMMAND = Command(
    "wait-ready",
    "wait until the metastore answers and the warehouse (and --input) buckets exist",
    run,
    arguments,
    order=30,
)
