"""The Spark session a job command runs on, from the environment it runs in."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from logberg.cli.logs import quiet_query_context_logs
from logberg.lakehouse import environment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def session(app_name: str, in_process: str | None = None) -> SparkSession:
    """In a cluster: LOGBERG_* settings, Spark as submitted. Else the local platform.
    `in_process`: this command (named) runs in-process whatever server runs."""
    quiet_query_context_logs()
    return environment.current().session(app_name, in_process)


def default_landing() -> str:
    """LOGBERG_LANDING, else the environment's landing (the local platform's)."""
    return os.environ.get("LOGBERG_LANDING") or environment.current().default_landing()
