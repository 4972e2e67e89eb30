"""What the integration files that run commands in both Spark modes share (test_spark_modes,
test_connect_server, test_warm_sessions): the modes' settings, a command that must pass, and
rows compared without what differs between two runs by design. Their fixtures (this home's
Spark Connect server, a landing) are in conftest.py beside this."""

from __future__ import annotations

import subprocess
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from logberg.pipeline.analytics import GOLD
from tests.conftest import run_logberg

CONNECT = {"LOGBERG_SPARK_MODE": "connect"}
IN_PROCESS = {"LOGBERG_SPARK_MODE": "in-process"}
MODES = {"connect": CONNECT, "in-process": IN_PROCESS}
GOLD_TABLES = (*(t.name for t in GOLD), "daily_latency")
# Columns that differ between two runs of the same job by design (when, which run).
VOLATILE = {"processed_timestamp", "rejected_at", "run_id", "ingested_at", "computed_at"}


def ok(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `logberg ARGS` in a child process; it must exit 0."""
    r = run_logberg(args, env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def mode_logged(r: subprocess.CompletedProcess[str], mode: str) -> None:
    """The command's log says which Spark it ran on."""
    expected_line = "Spark Connect server" if mode == "connect" else "spark: in-process"
    assert expected_line in r.stderr, r.stderr[-2000:]


def stable(df: DataFrame) -> DataFrame:
    return df.drop(*[c for c in df.columns if c in VOLATILE])


def table(spark: SparkSession, name: str) -> DataFrame:
    return stable(spark.table(f"nginx_logs.{name}"))


def canon(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows in an order that does not depend on how they were read (NULLs included)."""
    return sorted((tuple(r) for r in rows), key=repr)
