"""`logberg analytics`: the gold tables of access_logs.

- `transforms`: each table as a pure DataFrame -> DataFrame transform;
- `job`: the job, which reads one snapshot of access_logs, writes the tables and records
  the run (nginx_logs.analytics_runs);
- `config`: its settings and its result.
"""

from logberg.lakehouse.schema import ACCESS_LOGS
from logberg.pipeline.analytics.config import AnalyticsConfig, AnalyticsResult
from logberg.pipeline.analytics.job import GOLD, analytics, current_snapshot, read_at
from logberg.pipeline.analytics.transforms import (
    daily_latency,
    daily_top_devices,
    daily_top_ips,
    weekly_summary,
    weekly_top_devices,
    weekly_top_ips,
)

__all__ = [
    "ACCESS_LOGS",
    "GOLD",
    "AnalyticsConfig",
    "AnalyticsResult",
    "analytics",
    "current_snapshot",
    "daily_latency",
    "daily_top_devices",
    "daily_top_ips",
    "read_at",
    "weekly_summary",
    "weekly_top_devices",
    "weekly_top_ips",
]
