"""`logberg ui`: where to see what a run did: the History Server's address and the Spark
applications it lists (a command's own application, or the Spark Connect server's, whose
jobs are every command that ran on it)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from logberg.cli.command import Command
from logberg.errors import ConfigError


def _when(ms: int | None) -> str:
    if not ms or ms < 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def lines(base: str, apps: list[dict[str, Any]]) -> list[str]:
    """What `logberg ui` prints: the address, then one line per application, newest first:
    its id, name, state, start (UTC), duration and the address of its jobs."""
    out = [f"history   {base}"]
    if not apps:
        out.append("no applications yet: run a command (event logs: LOGBERG_EVENT_LOG)")

    def started(app: dict[str, Any]) -> int:
        return int((app.get("attempts") or [{}])[0].get("startTimeEpoch") or 0)

    for app in sorted(apps, key=started, reverse=True):
        attempt = (app.get("attempts") or [{}])[0]
        state = "completed" if attempt.get("completed") else "running"
        took = f"{attempt.get('duration', 0) / 1000:.1f}s" if attempt.get("completed") else "-"
        out.append(
            f"{app['id']}  {app.get('name', '')}  {state}  "
            f"{_when(attempt.get('startTimeEpoch'))}  {took}  {base}/history/{app['id']}/jobs/"
        )
    return out


def ui(a: argparse.Namespace) -> int:
    from logberg_platform import history
    from logberg_platform.local_settings import LocalSettings

    s = LocalSettings.from_env()
    found = history.running(s)
    if found is None:
        raise ConfigError(
            f"no History Server runs under {s.home} (LOGBERG_HOME); start it with "
            "`logberg local up --history`"
        )
    print("\n".join(lines(found.url, history.applications(found.url, a.limit))))
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=10, help="how many applications, newest first (10)")


COMMAND = Command(
    "ui",
    "the Spark History Server's address and the applications (runs) it lists",
    handler=ui,
    arguments=arguments,
    order=12,
)
