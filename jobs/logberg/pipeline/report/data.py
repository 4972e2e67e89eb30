"""What the report shows, read from the tables: plain, JSON-ready data.

Every number on the page comes from here, once: the gold tables for the tops, the device
shares and the weekly figures, and access_logs (pruned to the period's date partitions)
only for the hourly grain the gold tables do not keep. Each table is read at one snapshot,
named in the page.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse.connect import query
from logberg.lakehouse.schema import (
    ACCESS_LOGS,
    DAILY_LATENCY,
    DAILY_TOP_DEVICES,
    DAILY_TOP_IPS,
    WEEKLY_ANALYTICS,
    WEEKLY_TOP_IPS,
    Table,
)
from logberg.lakehouse.tables import existing
from logberg.output import plain
from logberg.pipeline.analytics import current_snapshot, read_at
from logberg.pipeline.weeks import iso_week, week_start

DEFAULT_DAYS = 28  # four ISO weeks, so week-over-week has something to compare


@dataclass(frozen=True)
class ReportConfig:
    since: dt.date | None = None
    until: dt.date | None = None
    output: str | None = None  # None: <warehouse>/reports/logberg-report.html

    def __post_init__(self) -> None:
        if self.since and self.until and self.since > self.until:
            raise ConfigError(f"--since {self.since} is after --until {self.until}")


@dataclass
class ReportData:
    since: str
    until: str
    generated_at: str
    snapshots: dict[str, int | None]  # table -> the snapshot read
    # One row per (date, hour) with traffic: requests and bytes of humans and of bots.
    hourly: list[dict[str, Any]] = field(default_factory=list)
    daily_ips: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # date -> rows
    weekly_ips: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # week -> rows
    devices: dict[str, dict[str, float]] = field(default_factory=dict)  # date -> type -> share
    weeks: list[dict[str, Any]] = field(default_factory=list)  # weekly_analytics rows
    week_days: dict[str, int] = field(default_factory=dict)  # week start -> days with data
    # daily_latency over all requests: per day requests, p50/p95/p99 ms; None: no timing
    latency: list[dict[str, Any]] | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [{k: plain(v) for k, v in r.asDict().items()} for r in df.collect()]


def period(spark: SparkSession, cfg: ReportConfig, present: set[str]) -> tuple[dt.date, dt.date]:
    """The configured period; by default the DEFAULT_DAYS up to the newest analysed day
    (from the oldest one, when there are fewer)."""
    oldest = newest = None
    if DAILY_TOP_IPS.name in present:
        row = query(spark, f"SELECT MIN(date), MAX(date) FROM {DAILY_TOP_IPS}").collect()[0]
        oldest, newest = row[0], row[1]
    until = cfg.until or newest or dt.datetime.now(dt.timezone.utc).date()
    since = cfg.since or until - dt.timedelta(days=DEFAULT_DAYS - 1)
    if cfg.since is None and oldest is not None and oldest <= until:
        since = max(since, oldest)
    if since > until:
        raise ConfigError(f"--since {since} is after the period's end {until} (--until)")
    return since, until


def gather(spark: SparkSession, cfg: ReportConfig) -> ReportData:
    present = set(existing(spark))
    since, until = period(spark, cfg, present)
    tables = (
        ACCESS_LOGS, DAILY_TOP_IPS, WEEKLY_TOP_IPS, DAILY_TOP_DEVICES, WEEKLY_ANALYTICS,
        DAILY_LATENCY,
    )  # fmt: skip
    snaps = {t.name: current_snapshot(spark, t) for t in tables if t.name in present}
    data = ReportData(
        since=since.isoformat(),
        until=until.isoformat(),
        generated_at=dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        snapshots=snaps,
    )

    def table(t: Table) -> DataFrame | None:
        return read_at(spark, t, snaps[t.name]) if snaps.get(t.name) is not None else None

    days = (F.col("date") >= F.lit(since)) & (F.col("date") <= F.lit(until))
    weeks = (F.col("week_start_date") >= F.lit(week_start(since))) & (
        F.col("week_start_date") <= F.lit(until)
    )
    week_range = (F.col("date") >= F.lit(week_start(since))) & (
        F.col("date") < F.lit(week_start(until) + dt.timedelta(days=7))
    )
    if (logs := table(ACCESS_LOGS)) is not None:
        data.hourly = _rows(hourly(logs.where(days)))
    if (lat := table(DAILY_LATENCY)) is not None:
        data.latency = latency(lat.where(days))
    if (ips := table(DAILY_TOP_IPS)) is not None:
        for r in _rows(ips.where(days).orderBy("date", "rank")):
            data.daily_ips.setdefault(r.pop("date"), []).append(_ip_row(r))
    if (wips := table(WEEKLY_TOP_IPS)) is not None:
        for r in _rows(wips.where(weeks).orderBy("week_start_date", "rank")):
            data.weekly_ips.setdefault(r["week_start_date"], []).append(_ip_row(r))
    if (devs := table(DAILY_TOP_DEVICES)) is not None:
        for r in _rows(devs.where(days).orderBy("date", "rank")):
            data.devices.setdefault(r["date"], {})[r["device_type"]] = r["share"]
        per_week = devs.where(week_range).groupBy(
            iso_week(F.col("date"))["week_start_date"].alias("week")
        )
        for w in per_week.agg(F.countDistinct("date").alias("n")).collect():
            data.week_days[w["week"].isoformat()] = w["n"]
    if (wk := table(WEEKLY_ANALYTICS)) is not None:
        data.weeks = [
            {k: v for k, v in r.items() if k != "processed_timestamp"}
            for r in _rows(wk.where(weeks).orderBy("week_start_date"))
        ]
    return data


def _ip_row(r: dict[str, Any]) -> dict[str, Any]:
    keep = ("rank", "ip_address", "request_count", "bytes_sent", "error_rate", "is_bot")
    return {k: r[k] for k in keep}


# ---- pure transforms -------------------------------------------------------------------


def hourly(logs: DataFrame) -> DataFrame:
    """Requests and bytes per (date, hour), humans and bots apart."""
    bot = F.col("is_bot")
    size = F.coalesce(F.col("response_size"), F.lit(0))
    return (
        logs.groupBy("date", "hour")
        .agg(
            F.count(F.when(~bot | bot.isNull(), 1)).alias("humans"),
            F.count(F.when(bot, 1)).alias("bots"),
            F.sum(F.when(~bot | bot.isNull(), size).otherwise(0)).alias("human_bytes"),
            F.sum(F.when(bot, size).otherwise(0)).alias("bot_bytes"),
        )
        .orderBy("date", "hour")
    )


def latency(daily: DataFrame) -> list[dict[str, Any]] | None:
    """daily_latency's rows over all requests, per day; None when it has none (the log
    format carries no $request_time)."""
    overall = daily.where((F.col("scope") == "status") & (F.col("status_category") == "All"))
    rows = _rows(
        overall.select(
            "date", "requests",
            F.col("p50_ms").alias("p50"), F.col("p95_ms").alias("p95"),
            F.col("p99_ms").alias("p99"),
        ).orderBy("date")
    )  # fmt: skip
    return rows or None
