"""`logberg analytics`: daily/weekly top IPs and devices, and weekly_analytics.

Incremental and exact: only the UTC days named by ingest runs this job has not yet covered
(nginx_logs.ingest_runs, anti-joined with nginx_logs.analytics_runs), and the ISO weeks
containing them, are recomputed from access_logs; their partitions are replaced atomically
(dynamic partition overwrite). Ranks are 1..N by count desc, then key asc.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from logberg import tables
from logberg.errors import ConfigError
from logberg.tables import qualified

D = tables.DATABASE
DAILY_TOP_IPS = f"{D}.daily_top_ips"
WEEKLY_TOP_IPS = f"{D}.weekly_top_ips"
DAILY_TOP_DEVICES = f"{D}.daily_top_devices"
WEEKLY_TOP_DEVICES = f"{D}.weekly_top_devices"
WEEKLY_ANALYTICS = f"{D}.weekly_analytics"
ANALYTICS_RUNS = f"{D}.analytics_runs"
HUMAN_SUFFIX = "_humans"


@dataclass(frozen=True)
class AnalyticsConfig:
    top_n: int = 10
    since: dt.date | None = None
    dates: tuple[dt.date, ...] = ()
    exclude_bots: bool = False
    full: bool = False


def parse_args(argv: Sequence[str]) -> AnalyticsConfig:
    p = argparse.ArgumentParser(prog="logberg analytics", description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--since",
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
    g.add_argument("--full", action="store_true", help="recompute every day in access_logs")
    p.add_argument("--top-n", type=int, default=10, help="ranks per day/week (default 10)")
    p.add_argument(
        "--exclude-bots",
        action="store_true",
        help="also build human-only *_humans variants of the top-IP tables",
    )
    a = p.parse_args(list(argv))
    if a.top_n < 1:
        raise ConfigError(f"--top-n {a.top_n}: must be at least 1")
    return AnalyticsConfig(
        top_n=a.top_n,
        since=a.since,
        dates=tuple(a.dates or ()),
        exclude_bots=a.exclude_bots,
        full=a.full,
    )


# ---- pure transforms -------------------------------------------------------------------


def iso_week_start(d: dt.date) -> dt.date:
    return d - dt.timedelta(days=d.weekday())


def week_columns(date: Column) -> list[Column]:
    """ISO week of a date: week_year (year of the Thursday), week_of_year, Monday, Sunday."""
    monday = F.date_sub(date, F.weekday(date))
    return [
        F.year(F.date_add(monday, 3)).alias("week_year"),
        F.weekofyear(date).alias("week_of_year"),
        monday.alias("week_start_date"),
        F.date_add(monday, 6).alias("week_end_date"),
    ]


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


def daily_top_ips(logs: DataFrame, n: int) -> DataFrame:
    return top_n(ip_stats(logs, ["date"]), ["date"], "request_count", "ip_address", n).select(
        "date",
        "rank",
        "ip_address",
        "request_count",
        "bytes_sent",
        "unique_paths",
        "error_rate",
        "is_bot",
    )


def with_week(logs: DataFrame) -> DataFrame:
    base = logs.drop(*[c for c in WEEK_KEYS if c in logs.columns])
    return base.select("*", *week_columns(F.col("date")))


WEEK_KEYS = ["week_year", "week_of_year", "week_start_date", "week_end_date"]


def weekly_top_ips(logs: DataFrame, n: int) -> DataFrame:
    stats = ip_stats(with_week(logs), WEEK_KEYS)
    return top_n(stats, WEEK_KEYS, "request_count", "ip_address", n).select(
        *WEEK_KEYS,
        "rank",
        "ip_address",
        "request_count",
        "bytes_sent",
        "unique_paths",
        "error_rate",
        "is_bot",
    )


def daily_top_devices(logs: DataFrame, n: int) -> DataFrame:
    stats = device_stats(logs, ["date"])
    return top_n(stats, ["date"], "request_count", "device_type", n).select(
        "date", "rank", "device_type", "request_count", "unique_ips", "share"
    )


def weekly_top_devices(logs: DataFrame, n: int) -> DataFrame:
    stats = device_stats(with_week(logs), WEEK_KEYS)
    return top_n(stats, WEEK_KEYS, "request_count", "device_type", n).select(
        *WEEK_KEYS, "rank", "device_type", "request_count", "unique_ips", "share"
    )


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
    return out.select(
        F.col("week_year").alias("year"),
        "week_of_year",
        "week_year",
        "week_start_date",
        "week_end_date",
        "total_requests",
        "unique_ips",
        "total_bytes",
        "informational_count",
        "success_count",
        "redirect_count",
        "client_error_count",
        "server_error_count",
        (
            (F.col("client_error_count") + F.col("server_error_count")) / F.col("total_requests")
        ).alias("error_rate"),
        "bot_share",
        "busiest_day",
        "busiest_day_requests",
        "busiest_hour",
        "busiest_hour_requests",
    )


# ---- IO ----------------------------------------------------------------------------------

DDL = {
    DAILY_TOP_IPS: (
        "date DATE, rank INT, ip_address STRING, request_count BIGINT, "
        "bytes_sent BIGINT, unique_paths BIGINT, error_rate DOUBLE, is_bot BOOLEAN, "
        "processed_timestamp TIMESTAMP",
        "date",
    ),
    WEEKLY_TOP_IPS: (
        "week_year INT, week_of_year INT, week_start_date DATE, week_end_date DATE, "
        "rank INT, ip_address STRING, request_count BIGINT, bytes_sent BIGINT, "
        "unique_paths BIGINT, error_rate DOUBLE, is_bot BOOLEAN, "
        "processed_timestamp TIMESTAMP",
        "week_start_date",
    ),
    DAILY_TOP_DEVICES: (
        "date DATE, rank INT, device_type STRING, request_count BIGINT, "
        "unique_ips BIGINT, share DOUBLE, processed_timestamp TIMESTAMP",
        "date",
    ),
    WEEKLY_TOP_DEVICES: (
        "week_year INT, week_of_year INT, week_start_date DATE, "
        "week_end_date DATE, rank INT, device_type STRING, request_count BIGINT, "
        "unique_ips BIGINT, share DOUBLE, processed_timestamp TIMESTAMP",
        "week_start_date",
    ),
    WEEKLY_ANALYTICS: (
        "year INT COMMENT 'ISO week-year', week_of_year INT, week_year INT, "
        "week_start_date DATE, week_end_date DATE, total_requests BIGINT, "
        "unique_ips BIGINT, total_bytes BIGINT, informational_count BIGINT, "
        "success_count BIGINT, redirect_count BIGINT, client_error_count BIGINT, "
        "server_error_count BIGINT, error_rate DOUBLE, bot_share DOUBLE, "
        "busiest_day DATE, busiest_day_requests BIGINT, busiest_hour INT, "
        "busiest_hour_requests BIGINT, processed_timestamp TIMESTAMP",
        "week_start_date",
    ),
}


def create_tables(spark: SparkSession, exclude_bots: bool) -> None:
    ddl = dict(DDL)
    if exclude_bots:
        ddl[DAILY_TOP_IPS + HUMAN_SUFFIX] = DDL[DAILY_TOP_IPS]
        ddl[WEEKLY_TOP_IPS + HUMAN_SUFFIX] = DDL[WEEKLY_TOP_IPS]
    props = tables._props({"write.distribution-mode": "hash"})
    for name, (cols, part) in ddl.items():
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {name} ({cols}) USING iceberg "
            f"PARTITIONED BY ({part}) TBLPROPERTIES ({props})"
        )
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {ANALYTICS_RUNS} (run_id STRING, started_at TIMESTAMP, "
        "finished_at TIMESTAMP, ingest_run_ids ARRAY<STRING>, dates ARRAY<DATE>, "
        "weeks ARRAY<DATE>, duration_s DOUBLE) USING iceberg "
        f"TBLPROPERTIES ({tables._props()})"
    )


def pending_ingest_days(spark: SparkSession) -> tuple[list[str], set[dt.date]]:
    """Ingest runs not yet covered by an analytics run, and the days they touched."""
    rows = spark.sql(
        f"""SELECT i.run_id, i.dates FROM {tables.INGEST_RUNS} i
        LEFT ANTI JOIN (SELECT explode(ingest_run_ids) AS run_id FROM {ANALYTICS_RUNS}) a
        ON i.run_id = a.run_id"""
    ).collect()
    days: set[dt.date] = set()
    for r in rows:
        days.update(r.dates or [])
    return [r.run_id for r in rows], days


def _in(col: str, values: Iterable[dt.date]) -> str:
    return f"{col} IN ({', '.join(repr(v.isoformat()) for v in sorted(values))})"


def _write(spark: SparkSession, df: DataFrame, table: str) -> None:
    df.withColumn("processed_timestamp", F.current_timestamp()).writeTo(
        qualified(spark, table)
    ).overwritePartitions()


def analytics(spark: SparkSession, cfg: AnalyticsConfig) -> dict[str, object]:
    t0 = time.monotonic()
    started = dt.datetime.now(dt.timezone.utc)
    tables.create_ingest_tables(spark)
    create_tables(spark, cfg.exclude_bots)
    run_ids, days = pending_ingest_days(spark)
    if cfg.full or cfg.since:
        where = f"WHERE date >= '{cfg.since.isoformat()}'" if cfg.since else ""
        days |= {
            r.date
            for r in spark.sql(f"SELECT DISTINCT date FROM {tables.ACCESS_LOGS} {where}").collect()
        }
    days |= set(cfg.dates)
    days = {d for d in days if d is not None}
    weeks = {iso_week_start(d) for d in days}
    if days:
        logs = spark.table(qualified(spark, tables.ACCESS_LOGS))
        day_logs = logs.where(_in("date", days))
        all_week_days = {w + dt.timedelta(days=i) for w in weeks for i in range(7)}
        week_logs = logs.where(_in("date", all_week_days))
        _write(spark, daily_top_ips(day_logs, cfg.top_n), DAILY_TOP_IPS)
        _write(spark, daily_top_devices(day_logs, cfg.top_n), DAILY_TOP_DEVICES)
        _write(spark, weekly_top_ips(week_logs, cfg.top_n), WEEKLY_TOP_IPS)
        _write(spark, weekly_top_devices(week_logs, cfg.top_n), WEEKLY_TOP_DEVICES)
        _write(spark, weekly_summary(week_logs), WEEKLY_ANALYTICS)
        if cfg.exclude_bots:
            humans_day = day_logs.where(~F.col("is_bot"))
            humans_week = week_logs.where(~F.col("is_bot"))
            _write(spark, daily_top_ips(humans_day, cfg.top_n), DAILY_TOP_IPS + HUMAN_SUFFIX)
            _write(spark, weekly_top_ips(humans_week, cfg.top_n), WEEKLY_TOP_IPS + HUMAN_SUFFIX)
    duration = time.monotonic() - t0
    if days or run_ids:
        spark.createDataFrame(
            [
                (
                    uuid.uuid4().hex[:16],
                    started,
                    dt.datetime.now(dt.timezone.utc),
                    run_ids,
                    sorted(days),
                    sorted(weeks),
                    duration,
                )
            ],
            "run_id STRING, started_at TIMESTAMP, finished_at TIMESTAMP, "
            "ingest_run_ids ARRAY<STRING>, dates ARRAY<DATE>, weeks ARRAY<DATE>, "
            "duration_s DOUBLE",
        ).writeTo(qualified(spark, ANALYTICS_RUNS)).append()
    print(
        f"analytics: days={len(days)} weeks={len(weeks)} ingest_runs={len(run_ids)} "
        f"top_n={cfg.top_n} duration={duration:.1f}s"
    )
    return {"days": sorted(days), "weeks": sorted(weeks), "duration_s": duration}


def main(argv: Sequence[str]) -> int:
    from logberg.session import build_session

    cfg = parse_args(argv)
    analytics(build_session("logberg-analytics"), cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
