"""`logberg analytics`: the daily and weekly top tables for the days that changed."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING

from logberg.cli.command import Command, config_from
from logberg.cli.spark import session

if TYPE_CHECKING:
    from logberg.pipeline.analytics import AnalyticsConfig


def options(p: argparse.ArgumentParser) -> None:
    """How the tables are built (also `logberg run`'s)."""
    p.add_argument("--top-n", type=int, default=10, help="ranks per day/week (default 10)")
    p.add_argument(
        "--exclude-bots",
        action="store_true",
        help="also build human-only *_humans variants of the top-IP tables",
    )
    p.add_argument(
        "--latency-min-hits",
        type=int,
        default=20,
        metavar="N",
        help="daily_latency: timed requests a path needs in a day to rank as slow (default 20)",
    )


def arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    # Not `since`/`full`: in `logberg run` those are ingest's.
    g.add_argument(
        "--since",
        dest="analytics_since",
        type=dt.date.fromisoformat,
        metavar="DATE",
        help="recompute every day from DATE on (and their weeks)",
    )
    g.add_argument(
        "--dates",
        type=dt.date.fromisoformat,
        nargs="+",
        metavar="DATE",
        help="recompute exactly these days (and their weeks)",
    )
    g.add_argument("--full", dest="analytics_full", action="store_true", help="recompute every day")
    options(p)


def analytics_config(a: argparse.Namespace) -> AnalyticsConfig:
    from logberg.pipeline.analytics import AnalyticsConfig

    return config_from(
        AnalyticsConfig,
        a,
        since=getattr(a, "analytics_since", None),
        dates=tuple(getattr(a, "dates", None) or ()),
        full=getattr(a, "analytics_full", False),
    )


def run(a: argparse.Namespace) -> int:
    from logberg.pipeline import metrics
    from logberg.pipeline.analytics import analytics

    cfg = analytics_config(a)  # a wrong option fails before Spark starts
    gateway = metrics.gateway()  # so does a LOGBERG_PUSHGATEWAY that is not a URL
    spark = session("logberg-analytics")
    result = analytics(spark, cfg)
    print(result.summary(), flush=True)
    metrics.push_analytics(gateway, spark, result)
    return 0


COMMAND = Command("analytics", "build the daily/weekly top tables", run, arguments, order=41)
