"""`logberg analytics`: daily/weekly top IPs and devices, weekly_analytics and daily_latency.

Incremental and exact: only the UTC days named by ingest runs this job has not yet covered
(nginx_logs.ingest_runs, anti-joined with nginx_logs.analytics_runs), and the ISO weeks
containing them, are recomputed from access_logs; their partitions are replaced atomically
(dynamic partition overwrite). Ranks are 1..N by count desc, then key asc.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.lakehouse import sql, tables
from logberg.lakehouse.commit_retry import CommitRetry
from logberg.lakehouse.connect import query
from logberg.lakehouse.parallel import concurrently, raise_first
from logberg.lakehouse.rows import rows_frame
from logberg.lakehouse.schema import (
    ACCESS_LOGS,
    ANALYTICS_RUNS,
    DAILY_LATENCY,
    DAILY_TOP_DEVICES,
    DAILY_TOP_IPS,
    DAILY_TOP_IPS_HUMANS,
    INGEST_RUNS,
    INGEST_TABLES,
    WEEKLY_ANALYTICS,
    WEEKLY_TOP_DEVICES,
    WEEKLY_TOP_IPS,
    WEEKLY_TOP_IPS_HUMANS,
    Table,
)
from logberg.lakehouse.tables import qualified
from logberg.pipeline.analytics.config import AnalyticsConfig, AnalyticsResult
from logberg.pipeline.analytics.transforms import (
    address_devices,
    address_paths,
    daily_latency,
    hour_rollup,
    of_listed,
    ranked_addresses,
    ranked_ips,
    summary_from,
    top_devices,
    with_paths,
)
from logberg.pipeline.weeks import week_days, week_start

GOLD = (DAILY_TOP_IPS, WEEKLY_TOP_IPS, DAILY_TOP_DEVICES, WEEKLY_TOP_DEVICES, WEEKLY_ANALYTICS)


def pending_ingest_days(spark: SparkSession) -> tuple[list[str], set[dt.date]]:
    """Ingest runs not yet covered by an analytics run, and the days they touched."""
    rows = query(
        spark,
        f"""SELECT i.run_id, i.dates FROM {INGEST_RUNS} i
        LEFT ANTI JOIN (SELECT explode(ingest_run_ids) AS run_id FROM {ANALYTICS_RUNS}) a
        ON i.run_id = a.run_id""",
    ).collect()
    days: set[dt.date] = set()
    for r in rows:
        days.update(r.dates or [])
    return [r.run_id for r in rows], days


def current_snapshot(spark: SparkSession, table: Table) -> int | None:
    """The table's current snapshot (None while it has none)."""
    rows = query(spark, f"SELECT snapshot_id FROM {table}.refs WHERE name = 'main'").collect()
    return int(rows[0][0]) if rows else None


def read_at(spark: SparkSession, table: Table, snapshot: int | None) -> DataFrame:
    reader = spark.read
    if snapshot is not None:
        reader = reader.option("versionAsOf", str(snapshot))
    return reader.table(qualified(spark, table))


TIMING_COLUMNS = ("request_time_ms", "upstream_response_time_ms")
WRITE_RETRY = CommitRetry()  # a write is a whole-partition replace: redoing it is exact


@dataclass(frozen=True)
class Write:
    """One table's commit: `df`'s rows with processed_timestamp, replacing the partitions
    they hold (dynamic overwrite), or every row where `replace` holds (even with no rows)."""

    table: Table
    df: DataFrame
    replace: str | None = None

    def __call__(self, target: str) -> None:
        """Commit to `target`, the table's qualified name (resolved by the caller's thread:
        a worker thread's session state need not have the current catalog)."""
        writer = (
            self.df.withColumn("processed_timestamp", F.current_timestamp())
            .select(*self.table.names)
            .writeTo(target)
        )
        if self.replace is None:
            writer.overwritePartitions()
        else:
            writer.overwrite(F.expr(self.replace))


# A cached rollup this small is read as one partition: every table's grouping, ranking and
# join over it then runs inside that partition, with no shuffle. At these sizes a shuffle
# stage costs more than its rows: the five tables' plans of a 5M-line week took half as long.
ONE_PARTITION_ROWS = 1_000_000


def cached(df: DataFrame, held: list[DataFrame]) -> DataFrame:
    """`df` persisted (added to `held`, to unpersist at the end) and computed; read as one
    partition when it is small enough."""
    df = df.persist()
    held.append(df)
    rows = df.count()
    return df.coalesce(1) if rows <= ONE_PARTITION_ROWS else df


def write_all(catalog: str, writes: Sequence[Write], steps: dict[str, float]) -> None:
    """Every table's write at once, to `catalog` (the session's current catalog, read by
    the job's own thread: a worker thread's session state need not have it, and then
    resolves names in spark_catalog, whose cache may hold a table dropped since). Each
    commits alone, on its own table (no two share a table's commit lock), and a commit
    conflict with another writer redoes that write only: it replaces whole partitions, so
    doing it again is exact."""

    def timed(w: Write, target: str) -> None:
        t = time.monotonic()
        WRITE_RETRY.run(lambda: w(target), f"analytics write of {w.table}")
        steps[w.table.name] = round(time.monotonic() - t, 2)  # printed: the bench profiles

    concurrently([functools.partial(timed, w, f"{catalog}.{w.table}") for w in writes], "analytics")


def top_ip_writes(
    logs: DataFrame,
    devices: DataFrame,
    day_devices: DataFrame,
    tables: tuple[Table, Table],
    n: int,
    held: list[DataFrame],
) -> list[Write]:
    """The daily and weekly top-IP writes (`tables`): rank the addresses (address_devices
    rows, cached), then count the paths of the ranked ones in `logs`: one grouping, cached
    for both tables."""
    by_day = ranked_ips(day_devices, n, weekly=False)
    by_week = ranked_ips(devices, n, weekly=True)
    listed = [r.ip_address for r in ranked_addresses([by_day, by_week]).collect()]
    paths = cached(address_paths(of_listed(logs, listed)), held)
    daily, weekly = tables
    return [
        Write(daily, with_paths(by_day, paths, weekly=False)),
        Write(weekly, with_paths(by_week, paths, weekly=True)),
    ]


def human_writes(
    catalog: str,
    week_logs: DataFrame,
    on_days: str,
    n: int,
    held: list[DataFrame],
    steps: dict[str, float],
) -> None:
    """daily_top_ips_humans and weekly_top_ips_humans (--exclude-bots), written: their own
    address_devices rollup (of the requests without a bot agent), cached for both."""
    humans = week_logs.where(~F.col("is_bot"))
    devices = cached(address_devices(humans), held)
    tables = (DAILY_TOP_IPS_HUMANS, WEEKLY_TOP_IPS_HUMANS)
    writes = top_ip_writes(humans, devices, devices.where(on_days), tables, n, held)
    write_all(catalog, writes, steps)


def tables_of(
    spark: SparkSession,
    logs: DataFrame,
    days: set[dt.date],
    weeks: set[dt.date],
    cfg: AnalyticsConfig,
    steps: dict[str, float],
) -> tuple[str, ...]:
    """Every table's rows for `days` and `weeks`, written; their names. The weeks hold the days: two
    cached rollups of their rows (address x device per day, and hour x status) serve the
    daily and weekly tables. The longest chain (address_devices, the ranking, the ranked
    addresses' paths) has the cores first; then every table is written at once."""
    t = time.monotonic()
    timing = [c for c in TIMING_COLUMNS if c in logs.columns]  # none before --log-format
    week_logs = logs.where(sql.dates_in("date", week_days(weeks)))
    on_days = sql.dates_in("date", days)
    n = cfg.top_n
    held: list[DataFrame] = []
    humans: list[Future[None]] = []
    catalog = spark.catalog.currentCatalog()  # in this thread (see write_all)
    try:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="analytics") as pool:
            hours_ready = pool.submit(cached, hour_rollup(week_logs), held)
            devices = cached(address_devices(week_logs), held)
            steps["address_devices"] = round(time.monotonic() - t, 2)
            day_devices = devices.where(on_days)
            tables = (DAILY_TOP_IPS, WEEKLY_TOP_IPS)
            writes = top_ip_writes(week_logs, devices, day_devices, tables, n, held)
            steps["top_ips_paths"] = round(time.monotonic() - t, 2)
            if cfg.exclude_bots:
                by = (catalog, week_logs, on_days, n, held, steps)
                humans.append(pool.submit(human_writes, *by))
            writes += [
                Write(DAILY_TOP_DEVICES, top_devices(day_devices, n, weekly=False)),
                Write(WEEKLY_TOP_DEVICES, top_devices(devices, n, weekly=True)),
            ]
            if "request_time_ms" in timing:
                latency = daily_latency(logs.where(on_days), cfg.top_n, cfg.latency_min_hits)
                # replaces these days whole, even with nothing: a day re-ingested without
                # timing keeps no stale rows
                writes.append(Write(DAILY_LATENCY, latency, replace=on_days))
            hours = hours_ready.result()
            steps["hour_rollup"] = round(time.monotonic() - t, 2)
            writes.append(Write(WEEKLY_ANALYTICS, summary_from(hours, devices)))
            write_all(catalog, writes, steps)
    finally:
        # (the pool has waited for every step: none is left running)
        for df in held:
            df.unpersist()
    raise_first(humans)
    steps["tables"] = round(time.monotonic() - t, 2)
    human_tables = (DAILY_TOP_IPS_HUMANS, WEEKLY_TOP_IPS_HUMANS) if cfg.exclude_bots else ()
    return tuple(t.name for t in (*(w.table for w in writes), *human_tables))


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
    steps: dict[str, float] = {"setup": round(time.monotonic() - t0, 2)}
    written = tables_of(spark, logs, days, weeks, cfg, steps) if days else ()
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
        rows_frame(spark, [row], ANALYTICS_RUNS.struct()).writeTo(
            qualified(spark, ANALYTICS_RUNS)
        ).append()
    return AnalyticsResult(
        sorted(days), sorted(weeks), len(run_ids), cfg.top_n, duration, steps, written
    )
