"""`logberg run`: ingest, then analytics for what it touched, in one Spark session."""

from __future__ import annotations

from pyspark.sql import SparkSession

from logberg.pipeline.analytics import AnalyticsConfig, AnalyticsResult, analytics
from logberg.pipeline.ingest.batch import IngestResult, ingest
from logberg.pipeline.ingest.config import IngestConfig


def run(
    spark: SparkSession, ingest_cfg: IngestConfig, analytics_cfg: AnalyticsConfig
) -> tuple[IngestResult, AnalyticsResult]:
    return ingest(spark, ingest_cfg), analytics(spark, analytics_cfg)
