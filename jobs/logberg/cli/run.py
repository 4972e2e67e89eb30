"""`logberg run`: ingest, then analytics for the days it touched, in one session."""

from __future__ import annotations

import argparse

from logberg.cli import analytics, ingest
from logberg.cli.command import Command
from logberg.cli.spark import session


def arguments(p: argparse.ArgumentParser) -> None:
    ingest.arguments(p)
    analytics.options(p)


def run(a: argparse.Namespace) -> int:
    from logberg.pipeline.run import run as run_pipeline

    ingest_cfg, analytics_cfg = ingest.ingest_config(a), analytics.analytics_config(a)
    ingested, analysed = run_pipeline(session("logberg-run"), ingest_cfg, analytics_cfg)
    print(ingested.summary(), flush=True)
    print(analysed.summary(), flush=True)
    return 0


COMMAND = Command("run", "ingest, then analytics for the days it touched", run, arguments, order=42)
