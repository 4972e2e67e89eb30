"""The gold-table transforms on tiny inline data, against a plain-Python reference: ties,
NULL paths, an address that is a bot exactly half the time, several devices per address,
and days on both sides of an ISO year boundary (2024-12-29 is in 2024-W52, 2024-12-30 in
2025-W01). No services: only the session's Spark."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from logberg.pipeline import analytics as an
from logberg.pipeline.parse import status_category

D1, D2, D3 = dt.date(2024, 12, 29), dt.date(2024, 12, 30), dt.date(2024, 12, 31)
N = 2
# date, hour, ip, path, size, status, device
RAW = [
    (D1, 10, "10.0.0.2", "/a", 100, 200, "desktop"),
    (D1, 10, "10.0.0.2", "/b", 50, 404, "desktop"),
    (D1, 11, "10.0.0.1", "/a", 10, 200, "mobile"),
    (D1, 11, "10.0.0.1", None, 0, 500, "bot"),  # one of two requests a bot: is_bot
    (D1, 12, "10.0.0.3", "/a", 5, 301, "tablet"),
    (D2, 0, "10.0.0.9", "/x", 1, 200, "bot"),
    (D2, 0, "10.0.0.9", "/x", 1, 200, "bot"),
    (D2, 1, "10.0.0.9", "/y", 1, 100, "desktop"),
    (D2, 1, "10.0.0.8", "/x", 7, 200, "mobile"),
    (D2, 1, "10.0.0.8", "/x", 7, 503, "mobile"),
    (D2, 1, "10.0.0.7", "/z", 3, 200, "other"),
    (D3, 5, "10.0.0.7", "/z", 3, 200, "other"),
    (D3, 5, "10.0.0.8", "/w", 2, 200, "mobile"),
    (D3, 6, "10.0.0.8", "/x", 2, 302, "desktop"),
    (D3, 6, "10.0.0.9", "/x", 9, 200, "bot"),
]


@pytest.fixture(scope="module")
def logs(spark: SparkSession) -> Any:
    df = spark.createDataFrame(
        RAW,
        "date DATE, hour INT, ip_address STRING, url_path STRING, response_size BIGINT, "
        "status_code INT, device_type STRING",
    )
    return df.select(
        "*",
        status_category(df.status_code).alias("status_category"),
        (df.device_type == "bot").alias("is_bot"),
    )


def check(actual: DataFrame, expected: list[tuple[Any, ...]]) -> None:
    """The transform's rows equal the reference's (doubles to assertDataFrameEqual's rtol)."""
    assertDataFrameEqual(actual, actual.sparkSession.createDataFrame(expected, actual.schema))


def monday(d: dt.date) -> dt.date:
    return d - dt.timedelta(days=d.weekday())


def week(d: dt.date) -> tuple[int, int, dt.date, dt.date]:
    y, w, _ = d.isocalendar()
    return (y, w, monday(d), monday(d) + dt.timedelta(days=6))


def ranked(groups: dict[Any, dict[str, list[Any]]], n: int) -> Iterable[tuple[Any, int, Any]]:
    """(group, rank, (key, stats)) for the top n keys by count desc, key asc."""
    for g, per in groups.items():
        order = sorted(per.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for i, (key, rows) in enumerate(order[:n], start=1):
            yield g, i, (key, rows)


def grouped(by: Any, key: Any) -> dict[Any, dict[Any, list[Any]]]:
    out: dict[Any, dict[Any, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for r in RAW:
        out[by(r)][key(r)].append(r)
    return out


def ip_row(g: tuple[Any, ...], rank: int, ip: str, rows: list[Any]) -> tuple[Any, ...]:
    bots = sum(r[6] == "bot" for r in rows)
    return (
        *g,
        rank,
        ip,
        len(rows),
        sum(r[4] for r in rows),
        len({r[3] for r in rows if r[3] is not None}),
        sum(r[5] >= 400 for r in rows) / len(rows),
        bots / len(rows) >= 0.5,
    )


def device_row(
    g: tuple[Any, ...], rank: int, dev: str, rows: list[Any], total: int
) -> tuple[Any, ...]:
    return (*g, rank, dev, len(rows), len({r[2] for r in rows}), len(rows) / total)


def test_daily_top_ips(logs: Any) -> None:
    expected = [
        ip_row((d,), rank, ip, rows)
        for d, rank, (ip, rows) in ranked(grouped(lambda r: r[0], lambda r: r[2]), N)
    ]
    assert any(r[-1] for r in expected) and any(r[1] == 2 for r in expected)  # is_bot, rank
    check(an.daily_top_ips(logs, N), expected)


def test_weekly_top_ips(logs: Any) -> None:
    expected = [
        ip_row(w, rank, ip, rows)
        for w, rank, (ip, rows) in ranked(grouped(lambda r: week(r[0]), lambda r: r[2]), N)
    ]
    weeks = {r[:4] for r in expected}
    assert weeks == {week(D1), week(D2)} and week(D1)[0] == 2024 and week(D2)[0] == 2025
    check(an.weekly_top_ips(logs, N), expected)


def test_top_devices(logs: Any) -> None:
    def day(r: tuple[Any, ...]) -> tuple[Any, ...]:
        return (r[0],)

    def week_of(r: tuple[Any, ...]) -> tuple[Any, ...]:
        return week(r[0])

    for fn, key in ((an.daily_top_devices, day), (an.weekly_top_devices, week_of)):
        groups = grouped(key, lambda r: r[6])
        totals = {g: sum(len(v) for v in per.values()) for g, per in groups.items()}
        expected = [
            device_row(g, rank, dev, rows, totals[g]) for g, rank, (dev, rows) in ranked(groups, N)
        ]
        check(fn(logs, N), expected)


def test_weekly_summary(logs: Any) -> None:
    expected = []
    for w, one in grouped(lambda r: week(r[0]), lambda r: 0).items():
        rows = one[0]
        cats: dict[int, int] = defaultdict(int)
        for r in rows:
            cats[r[5] // 100] += 1
        per_day = sorted(
            ((d, sum(r[0] == d for r in rows)) for d in {r[0] for r in rows}),
            key=lambda x: (-x[1], x[0]),
        )
        per_hour = sorted(
            ((h, sum(r[1] == h for r in rows)) for h in {r[1] for r in rows}),
            key=lambda x: (-x[1], x[0]),
        )
        n = len(rows)
        expected.append(
            (
                w[0], w[1], w[0], w[2], w[3], n, len({r[2] for r in rows}),
                sum(r[4] for r in rows), cats[1], cats[2], cats[3], cats[4], cats[5],
                (cats[4] + cats[5]) / n, sum(r[6] == "bot" for r in rows) / n,
                per_day[0][0], per_day[0][1], per_hour[0][0], per_hour[0][1],
            )
        )  # fmt: skip
    check(an.weekly_summary(logs), expected)


def test_daily_latency_exact_percentiles_slow_paths_and_untimed_rows(spark: SparkSession) -> None:
    """percentile_disc: the first value whose cumulative share reaches q, so every figure
    is a time that occurred. Rows without a request time are left out; a path with fewer
    than min_hits timed requests never ranks."""
    rows: list[tuple[dt.date, str, int, int | None, int | None]]
    rows = [(D1, "/a", 200, t, t - 1) for t in range(1, 101)]  # 1..100 ms
    rows += [(D1, "/b", 500, 1000, None), (D1, "/b", 502, 3000, None)]  # few hits: no rank
    rows += [(D1, "/c", 404, None, None)] * 5  # untimed
    rows += [(D2, "/a", 200, None, None)]  # a day with no timed request: no rows
    df = spark.createDataFrame(
        rows, "date DATE, url_path STRING, status_code INT, request_time_ms INT, "
        "upstream_response_time_ms INT",
    ).withColumn("status_category", status_category(F.col("status_code")))  # fmt: skip
    got = an.daily_latency(df, n=1, min_hits=3)
    cols = (
        "date DATE, scope STRING, status_category STRING, url_path STRING, rank INT, "
        "requests BIGINT, p50_ms INT, p95_ms INT, p99_ms INT, max_ms INT, upstream_p95_ms INT"
    )
    want = spark.createDataFrame(
        [
            (D1, "status", "Success", None, None, 100, 50, 95, 99, 100, 94),
            (D1, "status", "Server Error", None, None, 2, 1000, 3000, 3000, 3000, None),
            (D1, "status", "All", None, None, 102, 51, 97, 1000, 3000, 94),
            (D1, "path", None, "/a", 1, 100, 50, 95, 99, 100, 94),
        ],
        cols,
    )
    assertDataFrameEqual(got, want)


def test_a_missing_address_counts_as_one_address(logs: Any) -> None:
    """Rows without an address group together, as GROUP BY does: the daily figures join
    the weekly path rollup on the address NULL-safely."""
    spark = logs.sparkSession
    rows = [
        (D1, 1, None, "/a", 1, 200, "desktop"),
        (D1, 2, None, "/b", 2, 404, "bot"),
        (D1, 2, None, "/b", 3, 200, "bot"),
        (D1, 3, "10.0.0.1", "/a", 4, 200, "mobile"),
    ]
    df = spark.createDataFrame(rows, logs.drop("status_category", "is_bot").schema)
    df = df.select(
        "*",
        status_category(df.status_code).alias("status_category"),
        (df.device_type == "bot").alias("is_bot"),
    )
    check(
        an.daily_top_ips(df, N),
        [(D1, 1, None, 3, 6, 2, 1 / 3, True), (D1, 2, "10.0.0.1", 1, 4, 1, 0.0, False)],
    )
