"""The top tables at a glance (the end of `make demo`, `logberg top`): the newest day's top
IPs and device shares, and the weekly summary."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from logberg.lakehouse import sql
from logberg.lakehouse.connect import query
from logberg.lakehouse.schema import DAILY_TOP_DEVICES, DAILY_TOP_IPS, WEEKLY_ANALYTICS

Section = tuple[str, list[str], list[tuple[Any, ...]]]  # title, columns, rows


def top_tables(spark: SparkSession) -> list[Section]:
    """The sections to print; empty when analytics has not run yet."""
    latest = query(spark, f"SELECT MAX(date) FROM {DAILY_TOP_IPS}").collect()[0][0]
    if latest is None:
        return []
    day = sql.date_literal(latest)
    sections = []
    for title, statement in (
        (
            f"Top IPs on {latest}",
            f"SELECT rank, ip_address, request_count, bytes_sent, unique_paths, "
            f"ROUND(error_rate, 3) AS error_rate, is_bot FROM {DAILY_TOP_IPS} "
            f"WHERE date = {day} ORDER BY rank",
        ),
        (
            f"Device shares on {latest}",
            f"SELECT rank, device_type, request_count, unique_ips, "
            f"ROUND(100 * share, 1) AS share_pct FROM {DAILY_TOP_DEVICES} "
            f"WHERE date = {day} ORDER BY rank",
        ),
        (
            "Weekly summary",
            "SELECT year, week_of_year, week_start_date, total_requests, unique_ips, "
            "ROUND(error_rate, 3) AS error_rate, ROUND(bot_share, 3) AS bot_share, busiest_day, "
            f"busiest_hour FROM {WEEKLY_ANALYTICS} ORDER BY year, week_of_year",
        ),
    ):
        df = query(spark, statement)
        sections.append((title, df.columns, [tuple(r) for r in df.collect()]))
    return sections
