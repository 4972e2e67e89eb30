"""The analytics tables as pure transforms: DataFrame -> DataFrame, no IO."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from logberg.lakehouse.schema import (
    DAILY_LATENCY,
    DAILY_TOP_DEVICES,
    DAILY_TOP_IPS,
    WEEK_KEYS,
    WEEKLY_ANALYTICS,
    WEEKLY_TOP_DEVICES,
    WEEKLY_TOP_IPS,
    Table,
)
from logberg.pipeline.weeks import iso_week


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
