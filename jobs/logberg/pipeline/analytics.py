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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.lakehouse import sql, tables
from logberg.lakehouse.commit_retry import CommitRetry
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


# Rollups: the job reads access_logs once per rollup, and every table is derived from
# them. Distinct counts (paths per address, addresses per device class or week) become
# counts of rollup rows; the address x path grouping is done once per week, for the
# addresses that rank only.


def _sums(df: DataFrame, keys: Sequence[str], columns: Sequence[str]) -> DataFrame:
    return df.groupBy(*keys).agg(*[F.sum(c).alias(c) for c in columns])


SUMS = ("requests", "bytes", "errors", "bots", "bot_known")


def _request_sums() -> list[Column]:
    """requests, bytes, errors (status >= 400), bot requests, and requests whose is_bot is
    known (an average ignores unknowns)."""
    return [
        F.count("*").alias("requests"),
        F.sum("response_size").alias("bytes"),
        F.count(F.when(F.col("status_code") >= 400, 1)).alias("errors"),
        F.count(F.when(F.col("is_bot"), 1)).alias("bots"),
        F.count("is_bot").alias("bot_known"),
    ]


def _share(part: Column, whole: Column) -> Column:
    """part / whole, NULL where whole is 0 (as an average over no known values)."""
    return F.when(whole > 0, part / whole)


def _monday(date: Column) -> Column:
    return F.date_sub(date, F.weekday(date))


DAY_BIT = "shiftleft(1, weekday(date))"  # a bit per weekday, Monday the lowest


def address_paths(logs: DataFrame) -> DataFrame:
    """Per ISO week (week_start_date) and address: unique_paths, and day_paths, the distinct
    paths of each weekday (Monday first). One grouping by week, address and path, with a
    bit per weekday the path was requested on, gives both. It carries nothing else (the
    sums come from address_devices), and the job runs it over the ranked addresses' rows
    only (`of_addresses`): over every row it is 1.4M groups in a 5M-line week."""
    per_path = logs.groupBy(
        _monday(F.col("date")).alias("week_start_date"), "ip_address", "url_path"
    ).agg(F.bit_or(F.expr(DAY_BIT)).alias("days"))
    return paths_of(per_path)


def paths_of(per_path: DataFrame) -> DataFrame:
    """address_paths from its (week_start_date, ip_address, url_path, days) grouping."""
    on_day = [
        F.col("url_path").isNotNull() & (F.col("days").bitwiseAND(1 << d) != 0) for d in range(7)
    ]
    return per_path.groupBy("week_start_date", "ip_address").agg(
        F.count("url_path").alias("unique_paths"),  # rows are distinct paths; NULL is none
        F.array(*[F.count(F.when(c, 1)) for c in on_day]).alias("day_paths"),
    )


def _with_unique_paths(sums: DataFrame, paths: DataFrame, key: str) -> DataFrame:
    """`sums` with unique_paths from the `paths` row of equal `key` and address; a missing
    address (NULL) is one address. Both sides come from one scan of access_logs, so they
    are joined by alias: a condition between their columns would compare a column with
    itself, which Spark only rewrites with a warning."""
    same = (F.col(f"s.{key}") == F.col(f"p.{key}")) & F.col("s.ip_address").eqNullSafe(
        F.col("p.ip_address")
    )
    return sums.alias("s").join(paths.alias("p"), same).select("s.*", "p.unique_paths")


def address_devices(logs: DataFrame) -> DataFrame:
    """Per date, address and device class: the request sums."""
    return logs.groupBy("date", "ip_address", "device_type").agg(*_request_sums())


def ip_stats(sums: DataFrame) -> DataFrame:
    """The top-IP figures from per-address request sums (of a day or a week)."""
    return sums.select(
        "*",
        F.col("requests").alias("request_count"),
        F.col("bytes").alias("bytes_sent"),
        (F.col("errors") / F.col("requests")).alias("error_rate"),
        # An address counts as a bot when most of its requests carry a bot agent.
        (_share(F.col("bots"), F.col("bot_known")) >= 0.5).alias("is_bot"),
    )


def hour_rollup(logs: DataFrame) -> DataFrame:
    """Per date, hour and status class: the request sums."""
    return logs.groupBy("date", "hour", "status_category").agg(*_request_sums())


def device_stats(devices: DataFrame, group: Sequence[str]) -> DataFrame:
    """Per group and device class, from address_devices rows."""
    if list(group) != ["date"]:
        devices = _sums(devices, [*group, "device_type", "ip_address"], ["requests"])
    per = devices.groupBy(*group, "device_type").agg(
        F.sum("requests").alias("request_count"),
        F.count("ip_address").alias("unique_ips"),
    )
    total = F.sum("request_count").over(Window.partitionBy(*group))
    return per.withColumn("share", F.col("request_count") / total)


def output(df: DataFrame, table: Table) -> DataFrame:
    """The table's columns, in its order (processed_timestamp is added by the write)."""
    return df.select(*[c for c in table.names if c != "processed_timestamp"])


def with_week(df: DataFrame) -> DataFrame:
    base = df.drop(*[c for c in WEEK_KEYS if c in df.columns])
    week = iso_week(F.col("date"))
    return base.select("*", *[week[k].alias(k) for k in WEEK_KEYS])


def ranked_ips(devices: DataFrame, n: int, *, weekly: bool) -> DataFrame:
    """The n busiest addresses per day (or ISO week) from address_devices rows, ranked,
    with every top-IP figure but unique_paths."""
    if weekly:
        by_week = devices.withColumn("week_start_date", _monday(F.col("date")))
        sums = keyed_by_week(_sums(by_week, ["week_start_date", "ip_address"], SUMS))
        group = WEEK_KEYS
    else:
        sums, group = _sums(devices, ["date", "ip_address"], SUMS), ["date"]
    return top_n(ip_stats(sums), group, "request_count", "ip_address", n)


def ranked_addresses(ranked: Sequence[DataFrame]) -> DataFrame:
    """The distinct addresses of the `ranked` lists."""
    return functools.reduce(
        lambda a, b: a.union(b), [r.select("ip_address") for r in ranked]
    ).distinct()


def of_addresses(logs: DataFrame, ranked: Sequence[DataFrame]) -> DataFrame:
    """The rows of `logs` whose address is in one of the `ranked` lists (a missing address
    is one address: NULL matches NULL)."""
    same = F.col("l.ip_address").eqNullSafe(F.col("a.ip_address"))
    addresses = ranked_addresses(ranked).alias("a")
    return logs.alias("l").join(F.broadcast(addresses), same, "left_semi")


def of_listed(logs: DataFrame, addresses: Sequence[str | None]) -> DataFrame:
    """`of_addresses` with the addresses collected: a filter the scan evaluates."""
    known = F.col("ip_address").isin([a for a in addresses if a is not None])
    return logs.where(known | F.col("ip_address").isNull() if None in addresses else known)


def with_paths(ranked: DataFrame, paths: DataFrame, *, weekly: bool) -> DataFrame:
    """daily_top_ips or weekly_top_ips: `ranked` with unique_paths from address_paths
    (of rows that include every ranked address's days)."""
    if weekly:
        joined = _with_unique_paths(ranked, paths, "week_start_date")
        return output(joined, WEEKLY_TOP_IPS)
    days = paths.select(
        "week_start_date", "ip_address", F.posexplode("day_paths").alias("d", "unique_paths")
    ).select(F.date_add("week_start_date", F.col("d")).alias("date"), "ip_address", "unique_paths")
    return output(_with_unique_paths(ranked, days, "date"), DAILY_TOP_IPS)


def top_devices(devices: DataFrame, n: int, weekly: bool) -> DataFrame:
    group, table = (WEEK_KEYS, WEEKLY_TOP_DEVICES) if weekly else (["date"], DAILY_TOP_DEVICES)
    stats = device_stats(with_week(devices) if weekly else devices, group)
    return output(top_n(stats, group, "request_count", "device_type", n), table)


def keyed_by_week(weeks: DataFrame) -> DataFrame:
    """Rows keyed by week_start_date, with all the ISO week columns."""
    return with_week(weeks.withColumn("date", F.col("week_start_date"))).drop("date")


def summary_from(hours: DataFrame, devices: DataFrame) -> DataFrame:
    """weekly_analytics from an hour rollup and address_devices (of whole weeks); `year` is
    the ISO week-year (equal to week_year)."""
    wk = with_week(hours)
    cat = F.col("status_category")

    def of(category: str) -> Column:
        return F.sum(F.when(cat == category, F.col("requests")).otherwise(0))

    totals = wk.groupBy(*WEEK_KEYS).agg(
        F.sum("requests").alias("total_requests"),
        F.sum("bytes").alias("total_bytes"),
        of("Informational").alias("informational_count"),
        of("Success").alias("success_count"),
        of("Redirect").alias("redirect_count"),
        of("Client Error").alias("client_error_count"),
        of("Server Error").alias("server_error_count"),
        F.sum("bots").alias("bots"),
        F.sum("bot_known").alias("bot_known"),
    )
    addresses = devices.select(_monday(F.col("date")).alias("week_start_date"), "ip_address")
    ips = (
        keyed_by_week(addresses.distinct())
        .groupBy(*WEEK_KEYS)
        .agg(F.count("ip_address").alias("unique_ips"))  # a missing address is none
    )
    busiest_day = top_n(_sums(wk, [*WEEK_KEYS, "date"], ["requests"]), WEEK_KEYS, "requests",
                        "date", 1).select(
        *WEEK_KEYS, F.col("date").alias("busiest_day"),
        F.col("requests").alias("busiest_day_requests"),
    )  # fmt: skip
    busiest_hour = top_n(_sums(wk, [*WEEK_KEYS, "hour"], ["requests"]), WEEK_KEYS, "requests",
                         "hour", 1).select(
        *WEEK_KEYS, F.col("hour").alias("busiest_hour"),
        F.col("requests").alias("busiest_hour_requests"),
    )  # fmt: skip
    out = totals.join(ips, WEEK_KEYS).join(busiest_day, WEEK_KEYS).join(busiest_hour, WEEK_KEYS)
    errors = F.col("client_error_count") + F.col("server_error_count")
    out = out.select(
        "*",
        F.col("week_year").alias("year"),
        (errors / F.col("total_requests")).alias("error_rate"),
        _share(F.col("bots"), F.col("bot_known")).alias("bot_share"),
    )
    return output(out, WEEKLY_ANALYTICS)


# The tables from raw rows (each builds the rollup it needs; the job shares them).


def daily_top_ips(logs: DataFrame, n: int) -> DataFrame:
    ranked = ranked_ips(address_devices(logs), n, weekly=False)
    return with_paths(ranked, address_paths(of_addresses(logs, [ranked])), weekly=False)


def weekly_top_ips(logs: DataFrame, n: int) -> DataFrame:
    ranked = ranked_ips(address_devices(logs), n, weekly=True)
    return with_paths(ranked, address_paths(of_addresses(logs, [ranked])), weekly=True)


def daily_top_devices(logs: DataFrame, n: int) -> DataFrame:
    return top_devices(address_devices(logs), n, weekly=False)


def weekly_top_devices(logs: DataFrame, n: int) -> DataFrame:
    return top_devices(address_devices(logs), n, weekly=True)


def weekly_summary(logs: DataFrame) -> DataFrame:
    return summary_from(hour_rollup(logs), address_devices(logs))


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


def raise_first(futures: Sequence[Future[Any]]) -> None:
    """Raise the first error of `futures` (all done), if any."""
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        raise errors[0]


def concurrently(steps: Sequence[Callable[[], object]]) -> None:
    """Run every step at once, each in its own thread: Spark runs concurrent jobs of one
    session (and a Spark Connect session concurrent queries), so small jobs fill the cores
    one alone leaves idle, and commits overlap their metastore round trips. Every step runs
    to its end before the first error is raised, so none is left running."""
    with ThreadPoolExecutor(max_workers=max(1, len(steps)), thread_name_prefix="analytics") as pool:
        futures = [pool.submit(step) for step in steps]
    raise_first(futures)


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

    concurrently([functools.partial(timed, w, f"{catalog}.{w.table}") for w in writes])


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
) -> None:
    """Every table's rows for `days` and `weeks`, written. The weeks hold the days: two
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
    if days:
        tables_of(spark, logs, days, weeks, cfg, steps)
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
    return AnalyticsResult(sorted(days), sorted(weeks), len(run_ids), cfg.top_n, duration, steps)
