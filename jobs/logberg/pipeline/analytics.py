"""`logberg analytics`: daily/weekly top IPs and devices, weekly_analytics and daily_latency.

Incremental and exact: only the UTC days named by ingest runs this job has not yet covered
(nginx_logs.ingest_runs, anti-joined with nginx_logs.analytics_runs), and the ISO weeks
containing them, are recomputed from access_logs; their partitions are replaced atomically
(dynamic partition overwrite). Ranks are 1..N by count desc, then key asc.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse import sql, tables
from logberg.lakehouse.schema import (
    ACCESS_LOGS,
    ANALYTICS_RUNS,
    DAILY_LATENCY,
    DAILY_TOP_DEVICES,
    DAILY_TOP_IPS,
    DAILY_TOP_IPS_HUMANS,
    INGEST_RUNS,
    INGEST_TABLES,
    WEEK_KEYS,
    WEEKLY_ANALYTICS,
    WEEKLY_TOP_DEVICES,
    WEEKLY_TOP_IPS,
    WEEKLY_TOP_IPS_HUMANS,
    Table,
)
from logberg.lakehouse.tables import qualified
from logberg.pipeline.weeks import iso_week, week_days, week_start


@dataclass(frozen=True)
class AnalyticsConfig:
    top_n: int = 10
    since: dt.date | None = None
    dates: tuple[dt.date, ...] = ()
    exclude_bots: bool = False
    full: bool = False
    latency_min_hits: int = 20  # a path's requests in a day before it can rank as slow

    def __post_init__(self) -> None:
        if self.top_n < 1:
            raise ConfigError(f"--top-n {self.top_n}: must be at least 1")
        if self.latency_min_hits < 1:
            raise ConfigError(f"--latency-min-hits {self.latency_min_hits}: must be at least 1")


@dataclass(frozen=True)
class AnalyticsResult:
    days: list[dt.date]
    weeks: list[dt.date]  # their Mondays
    ingest_runs: int
    top_n: int
    duration_s: float
    steps: Mapping[str, float] = field(default_factory=dict)  # seconds per table written

    def summary(self) -> str:
        steps = ",".join(f"{k}:{v}" for k, v in self.steps.items())
        return (
            f"analytics: days={len(self.days)} weeks={len(self.weeks)} "
            f"ingest_runs={self.ingest_runs} top_n={self.top_n} duration={self.duration_s:.1f}s"
            + (f" steps={steps}" if steps else "")
        )


# ---- pure transforms -------------------------------------------------------------------


def top_n(df: DataFrame, group: Sequence[str], count: str, key: str, n: int) -> DataFrame:
    """Rank rows within each group by `count` desc, then `key` asc; keep ranks 1..n."""
    w = Window.partitionBy(*group).orderBy(F.col(count).desc(), F.col(key).asc())
    return df.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= n)


def ip_stats(logs: DataFrame, group: Sequence[str]) -> DataFrame:
    return logs.groupBy(*group, "ip_address").agg(
        F.count("*").alias("request_count"),
        F.sum("response_size").alias("bytes_sent"),
        F.countDistinct("url_path").alias("unique_paths"),
        (F.count(F.when(F.col("status_code") >= 400, 1)) / F.count("*")).alias("error_rate"),
        # An address counts as a bot when most of its requests carry a bot agent.
        (F.avg(F.col("is_bot").cast("double")) >= 0.5).alias("is_bot"),
    )


def device_stats(logs: DataFrame, group: Sequence[str]) -> DataFrame:
    per = logs.groupBy(*group, "device_type").agg(
        F.count("*").alias("request_count"),
        F.countDistinct("ip_address").alias("unique_ips"),
    )
    total = F.sum("request_count").over(Window.partitionBy(*group))
    return per.withColumn("share", F.col("request_count") / total)


def output(df: DataFrame, table: Table) -> DataFrame:
    """The table's columns, in its order (processed_timestamp is added by the write)."""
    return df.select(*[c for c in table.names if c != "processed_timestamp"])


def daily_top_ips(logs: DataFrame, n: int) -> DataFrame:
    stats = ip_stats(logs, ["date"])
    return output(top_n(stats, ["date"], "request_count", "ip_address", n), DAILY_TOP_IPS)


def with_week(logs: DataFrame) -> DataFrame:
    base = logs.drop(*[c for c in WEEK_KEYS if c in logs.columns])
    week = iso_week(F.col("date"))
    return base.select("*", *[week[k].alias(k) for k in WEEK_KEYS])


def weekly_top_ips(logs: DataFrame, n: int) -> DataFrame:
    stats = ip_stats(with_week(logs), WEEK_KEYS)
    return output(top_n(stats, WEEK_KEYS, "request_count", "ip_address", n), WEEKLY_TOP_IPS)


def daily_top_devices(logs: DataFrame, n: int) -> DataFrame:
    stats = device_stats(logs, ["date"])
    ranked = top_n(stats, ["date"], "request_count", "device_type", n)
    return output(ranked, DAILY_TOP_DEVICES)


def weekly_top_devices(logs: DataFrame, n: int) -> DataFrame:
    stats = device_stats(with_week(logs), WEEK_KEYS)
    ranked = top_n(stats, WEEK_KEYS, "request_count", "device_type", n)
    return output(ranked, WEEKLY_TOP_DEVICES)


def weekly_summary(logs: DataFrame) -> DataFrame:
    """One row per ISO week; `year` is the ISO week-year (equal to week_year)."""
    wk = with_week(logs)
    cat = F.col("status_category")
    totals = wk.groupBy(*WEEK_KEYS).agg(
        F.count("*").alias("total_requests"),
        F.countDistinct("ip_address").alias("unique_ips"),
        F.sum("response_size").alias("total_bytes"),
        F.count(F.when(cat == "Informational", 1)).alias("informational_count"),
        F.count(F.when(cat == "Success", 1)).alias("success_count"),
        F.count(F.when(cat == "Redirect", 1)).alias("redirect_count"),
        F.count(F.when(cat == "Client Error", 1)).alias("client_error_count"),
        F.count(F.when(cat == "Server Error", 1)).alias("server_error_count"),
        F.avg(F.col("is_bot").cast("double")).alias("bot_share"),
    )
    busiest_day = top_n(
        wk.groupBy(*WEEK_KEYS, "date").agg(F.count("*").alias("n")), WEEK_KEYS, "n", "date", 1
    ).select(
        *WEEK_KEYS, F.col("date").alias("busiest_day"), F.col("n").alias("busiest_day_requests")
    )
    busiest_hour = top_n(
        wk.groupBy(*WEEK_KEYS, "hour").agg(F.count("*").alias("n")), WEEK_KEYS, "n", "hour", 1
    ).select(
        *WEEK_KEYS, F.col("hour").alias("busiest_hour"), F.col("n").alias("busiest_hour_requests")
    )
    out = totals.join(busiest_day, WEEK_KEYS).join(busiest_hour, WEEK_KEYS)
    errors = F.col("client_error_count") + F.col("server_error_count")
    out = out.select(
        "*",
        F.col("week_year").alias("year"),
        (errors / F.col("total_requests")).alias("error_rate"),
    )
    return output(out, WEEKLY_ANALYTICS)


def latency_stats(timed: DataFrame, group: Sequence[str]) -> DataFrame:
    def pct(q: float, column: str = "request_time_ms") -> Column:
        return F.expr(f"percentile_disc({q}) WITHIN GROUP (ORDER BY {column})").cast("int")

    return timed.groupBy(*group).agg(
        F.count("*").alias("requests"),
        pct(0.5).alias("p50_ms"),
        pct(0.95).alias("p95_ms"),
        pct(0.99).alias("p99_ms"),
        F.max("request_time_ms").alias("max_ms"),
        pct(0.95, "upstream_response_time_ms").alias("upstream_p95_ms"),
    )


def daily_latency(logs: DataFrame, n: int, min_hits: int) -> DataFrame:
    """Request-time percentiles per day: per status class and over all ('All'), then the n
    slowest paths by p95 among those with at least `min_hits` timed requests that day.
    Rows without a request time (a format without $request_time) are left out, so such
    days have no rows."""
    timed = logs.where(F.col("request_time_ms").isNotNull())
    status = latency_stats(timed, ["date", "status_category"])
    overall = latency_stats(timed, ["date"]).withColumn("status_category", F.lit("All"))
    by_status = status.unionByName(overall).select(
        "*", F.lit("status").alias("scope"), F.lit(None).cast("string").alias("url_path"),
        F.lit(None).cast("int").alias("rank"),
    )  # fmt: skip
    paths = latency_stats(timed.where(F.col("url_path").isNotNull()), ["date", "url_path"])
    slow = top_n(paths.where(F.col("requests") >= min_hits), ["date"], "p95_ms", "url_path", n)
    slow = slow.select(
        "*", F.lit("path").alias("scope"), F.lit(None).cast("string").alias("status_category")
    )
    return output(by_status.unionByName(slow), DAILY_LATENCY)


# ---- IO ----------------------------------------------------------------------------------

GOLD = (DAILY_TOP_IPS, WEEKLY_TOP_IPS, DAILY_TOP_DEVICES, WEEKLY_TOP_DEVICES, WEEKLY_ANALYTICS)


def pending_ingest_days(spark: SparkSession) -> tuple[list[str], set[dt.date]]:
    """Ingest runs not yet covered by an analytics run, and the days they touched."""
    rows = spark.sql(
        f"""SELECT i.run_id, i.dates FROM {INGEST_RUNS} i
        LEFT ANTI JOIN (SELECT explode(ingest_run_ids) AS run_id FROM {ANALYTICS_RUNS}) a
        ON i.run_id = a.run_id"""
    ).collect()
    days: set[dt.date] = set()
    for r in rows:
        days.update(r.dates or [])
    return [r.run_id for r in rows], days


def current_snapshot(spark: SparkSession, table: Table) -> int | None:
    """The table's current snapshot (None while it has none)."""
    rows = spark.sql(f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'").collect()
    return int(rows[0][0]) if rows else None


def read_at(spark: SparkSession, table: Table, snapshot: int | None) -> DataFrame:
    reader = spark.read
    if snapshot is not None:
        reader = reader.option("versionAsOf", str(snapshot))
    return reader.table(qualified(spark, table))


def _write(spark: SparkSession, df: DataFrame, table: Table) -> None:
    df.withColumn("processed_timestamp", F.current_timestamp()).select(*table.names).writeTo(
        qualified(spark, table)
    ).overwritePartitions()


def analytics(spark: SparkSession, cfg: AnalyticsConfig) -> AnalyticsResult:
    """Recompute the days ingest touched since the last run (and `cfg`'s), and their weeks."""
    t0 = time.monotonic()
    started = dt.datetime.now(dt.timezone.utc)
    humans = (DAILY_TOP_IPS_HUMANS, WEEKLY_TOP_IPS_HUMANS) if cfg.exclude_bots else ()
    tables.ensure(
        spark, (*INGEST_TABLES, *GOLD, DAILY_LATENCY, *humans, ANALYTICS_RUNS), (ANALYTICS_RUNS,)
    )
    # The runs first, then the snapshot: a run's row is written after its data commit, so
    # the snapshot holds every pending run's rows. Every read below is of that one snapshot,
    # so an ingest committing meanwhile never shows up half in the tables.
    run_ids, days = pending_ingest_days(spark)
    snapshot = current_snapshot(spark, ACCESS_LOGS)
    logs = read_at(spark, ACCESS_LOGS, snapshot)
    if cfg.full or cfg.since:
        since = logs.where(F.col("date") >= F.lit(cfg.since)) if cfg.since else logs
        days |= {r.date for r in since.select("date").distinct().collect()}
    days |= set(cfg.dates)
    days = {d for d in days if d is not None}
    weeks = {week_start(d) for d in days}
    steps: dict[str, float] = {}
    if days:
        day_logs = logs.where(sql.dates_in("date", days))
        week_logs = logs.where(sql.dates_in("date", week_days(weeks)))
        wanted = [
            (DAILY_TOP_IPS, daily_top_ips(day_logs, cfg.top_n)),
            (DAILY_TOP_DEVICES, daily_top_devices(day_logs, cfg.top_n)),
            (WEEKLY_TOP_IPS, weekly_top_ips(week_logs, cfg.top_n)),
            (WEEKLY_TOP_DEVICES, weekly_top_devices(week_logs, cfg.top_n)),
            (WEEKLY_ANALYTICS, weekly_summary(week_logs)),
        ]
        if cfg.exclude_bots:
            humans_day = day_logs.where(~F.col("is_bot"))
            humans_week = week_logs.where(~F.col("is_bot"))
            wanted += [
                (DAILY_TOP_IPS_HUMANS, daily_top_ips(humans_day, cfg.top_n)),
                (WEEKLY_TOP_IPS_HUMANS, weekly_top_ips(humans_week, cfg.top_n)),
            ]
        for table, df in wanted:
            t = time.monotonic()
            _write(spark, df, table)
            steps[table.name] = round(time.monotonic() - t, 2)  # printed: the bench profiles
        if "request_time_ms" in logs.columns:  # a table from before --log-format has none
            t = time.monotonic()
            latency = daily_latency(day_logs, cfg.top_n, cfg.latency_min_hits)
            # replaces these days whole, even with nothing: a day re-ingested without timing
            # keeps no stale rows
            latency.withColumn("processed_timestamp", F.current_timestamp()).select(
                *DAILY_LATENCY.names
            ).writeTo(qualified(spark, DAILY_LATENCY)).overwrite(F.expr(sql.dates_in("date", days)))
            steps[DAILY_LATENCY.name] = round(time.monotonic() - t, 2)
    duration = time.monotonic() - t0
    if days or run_ids:
        row = (
            uuid.uuid4().hex[:16],
            started,
            dt.datetime.now(dt.timezone.utc),
            run_ids,
            sorted(days),
            sorted(weeks),
            duration,
            snapshot,
        )
        spark.createDataFrame([row], ANALYTICS_RUNS.struct()).writeTo(
            qualified(spark, ANALYTICS_RUNS)
        ).append()
    return AnalyticsResult(sorted(days), sorted(weeks), len(run_ids), cfg.top_n, duration, steps)
