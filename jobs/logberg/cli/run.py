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
    from logberg.pipeline import metrics
    from logberg.pipeline.run import run as run_pipeline

    ingest_cfg, analytics_cfg = ingest.ingest_config(a), analytics.analytics_config(a)
    gateway = metrics.gateway()
    spark = session("logberg-run")
    ingested, analysed = run_pipeline(spark, ingest_cfg, analytics_cfg)
    print(ingested.summary(), flush=True)
    print(analysed.summary(), flush=True)
    metrics.push_ingest(gateway, spark, ingested, ingest_cfg)
    metrics.push_analytics(gateway, spark, analysed)
    return 0


COMMAND = Command("run", "ingest, then analytics for the days it touched", run, arguments, order=42)
