"""Analytics against the generator's ground truth: daily/weekly top IPs and devices, ISO
weeks across the new year, incremental recomputation and idempotent re-runs."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from logberg.lakehouse import schema
from logberg.pipeline import analytics as an
from logberg.pipeline.ingest.batch import ingest
from logberg.pipeline.ingest.config import IngestConfig
from tests.conftest import REPO, reset_namespace

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]
TOP = 10


def generate(out: Path, seed: int, start: str, end: str, files: int, lines: int) -> dict[str, Any]:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "--output",
            out.as_uri(),
            "--num-files",
            str(files),
            "--lines-per-file",
            str(lines),
            "--start-date",
            start,
            "--end-date",
            end,
            "--seed",
            str(seed),
            "--malformed-rate",
            "0.005",
            "--quiet",
        ],
        check=True,
        cwd=REPO,
        capture_output=True,
    )
    [manifest] = (out / "raw" / "nginx" / "_manifests").glob("*.json")
    return dict(json.loads(manifest.read_text()))


def run_ingest(spark, landing: Path) -> None:
    ingest(spark, IngestConfig(inputs=(landing.as_uri(),)))


@pytest.fixture(scope="module")
def new_year(spark, lakehouse, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    reset_namespace(spark)  # the rerun test expects no ingest run of other modules pending
    out = tmp_path_factory.mktemp("new-year")
    manifest = generate(out, 31, "2024-12-28", "2025-01-06", files=10, lines=3000)
    run_ingest(spark, out)
    an.analytics(spark, an.AnalyticsConfig(top_n=TOP))
    return manifest


def test_daily_tops_match_ground_truth(spark, new_year) -> None:
    for day, truth in new_year["days"].items():
        ips = [
            [r.ip_address, r.request_count]
            for r in spark.sql(
                f"SELECT ip_address, request_count FROM nginx_logs.daily_top_ips "
                f"WHERE date = DATE'{day}' ORDER BY rank"
            ).collect()
        ]
        assert ips == truth["top_ips"][:TOP], day
        ranks = [
            r[0]
            for r in spark.sql(
                f"SELECT rank FROM nginx_logs.daily_top_ips WHERE date = DATE'{day}' ORDER BY rank"
            ).collect()
        ]
        assert ranks == list(range(1, len(ranks) + 1))
        devices = {
            r.device_type: r.request_count
            for r in spark.sql(
                f"SELECT device_type, request_count FROM nginx_logs.daily_top_devices "
                f"WHERE date = DATE'{day}'"
            ).collect()
        }
        assert devices == {k: v for k, v in truth["device_types"].items() if v}, day


def test_weekly_tops_match_ground_truth(spark, new_year) -> None:
    for key, truth in new_year["weeks"].items():
        start = truth["week_start"]
        if truth["days"] < 7:
            continue  # a partial week also holds other tests' days; full weeks only
        ips = [
            [r.ip_address, r.request_count]
            for r in spark.sql(
                f"SELECT ip_address, request_count FROM nginx_logs.weekly_top_ips "
                f"WHERE week_start_date = DATE'{start}' ORDER BY rank"
            ).collect()
        ]
        assert ips == truth["top_ips"][:TOP], key
        devices = {
            r.device_type: r.request_count
            for r in spark.sql(
                f"SELECT device_type, request_count FROM nginx_logs.weekly_top_devices "
                f"WHERE week_start_date = DATE'{start}'"
            ).collect()
        }
        assert devices == {k: v for k, v in truth["device_types"].items() if v}, key


def test_iso_weeks_across_the_new_year(spark, new_year) -> None:
    rows = {
        str(r.week_start_date): (r.year, r.week_of_year, r.week_year, str(r.week_end_date))
        for r in spark.sql(
            "SELECT * FROM nginx_logs.weekly_analytics WHERE week_start_date "
            "BETWEEN DATE'2024-12-23' AND DATE'2025-01-06' ORDER BY year, week_of_year"
        ).collect()
    }
    assert rows["2024-12-23"] == (2024, 52, 2024, "2024-12-29")
    assert rows["2024-12-30"] == (2025, 1, 2025, "2025-01-05")
    assert rows["2025-01-06"] == (2025, 2, 2025, "2025-01-12")
    w1 = spark.sql(
        "SELECT total_requests, busiest_day FROM nginx_logs.weekly_analytics "
        "WHERE week_start_date = DATE'2024-12-30'"
    ).collect()[0]
    assert w1.total_requests == new_year["weeks"]["2025-W01"]["valid"]
    assert dt.date(2024, 12, 30) <= w1.busiest_day <= dt.date(2025, 1, 5)


def snapshots(spark, table: str) -> list[Any]:
    return spark.sql(
        f"SELECT snapshot_id, summary FROM {table}.snapshots ORDER BY committed_at"
    ).collect()


TABLES = [t.qualified for t in an.GOLD]


@pytest.fixture(scope="module")
def duck_gold(spark, new_year, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """bench/duckdb_analytics.py over access_logs' current data files: its output folder
    and the rows it reports per table."""
    from bench import gold

    files = gold.access_logs_files(spark)
    assert files and all(Path(f).is_file() for f in files)
    tmp = tmp_path_factory.mktemp("duck-gold")
    (tmp / "files.txt").write_text("\n".join(files) + "\n")
    script = str(REPO / "bench" / "duckdb_analytics.py")
    args = ["--files", str(tmp / "files.txt"), "--output", str(tmp / "out"), "--top-n", str(TOP)]
    proc = subprocess.run(
        [sys.executable, script, *args],
        capture_output=True, text=True, check=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    return tmp / "out", json.loads(proc.stdout.splitlines()[-1])["rows"]


def test_the_duckdb_baseline_builds_the_same_gold_tables(spark, duck_gold) -> None:
    """The baseline, over the same access_logs files, gives our rows exactly (across the new
    year, so ISO week-years too): the bench compares with it."""
    from bench import gold

    out, rows = duck_gold
    assert rows["weekly_analytics"] == 3 and rows["daily_top_ips"] == 10 * TOP  # 12-28..01-06
    assert gold.mismatches(spark, out) == {}


def test_the_comparison_sees_one_changed_value(spark, duck_gold, tmp_path) -> None:
    """The check above can fail: one count changed in the baseline's output is reported."""
    import duckdb

    from bench import gold

    out = tmp_path / "duck"
    shutil.copytree(duck_gold[0], out)
    path, changed = out / "weekly_top_devices.parquet", tmp_path / "changed.parquet"
    duckdb.sql(
        "COPY (SELECT * REPLACE (CASE WHEN rank = 1 THEN unique_ips + 1 ELSE unique_ips END "
        f"AS unique_ips) FROM read_parquet('{path}')) TO '{changed}' (FORMAT parquet)"
    )
    changed.replace(path)
    assert list(gold.mismatches(spark, out)) == ["weekly_top_devices"]


def test_rerun_with_nothing_new_changes_nothing(spark, new_year) -> None:
    before = {t: len(snapshots(spark, t)) for t in TABLES}
    data = {t: spark.table(t).drop("processed_timestamp").collect() for t in TABLES}
    result = an.analytics(spark, an.AnalyticsConfig(top_n=TOP))
    assert result.days == []
    assert {t: len(snapshots(spark, t)) for t in TABLES} == before
    for t in TABLES:
        assertDataFrameEqual(spark.table(t).drop("processed_timestamp").collect(), data[t])


@pytest.mark.slow
def test_adding_a_day_rewrites_only_that_day_and_week(spark, lakehouse, tmp_path: Path) -> None:
    history = tmp_path / "history"
    generate(history, 41, "2023-03-01", "2023-03-30", files=30, lines=800)
    run_ingest(spark, history)
    an.analytics(spark, an.AnalyticsConfig(top_n=TOP))
    before = {t: len(snapshots(spark, t)) for t in TABLES}

    extra = tmp_path / "extra"
    generate(extra, 42, "2023-03-31", "2023-03-31", files=1, lines=800)
    run_ingest(spark, extra)
    result = an.analytics(spark, an.AnalyticsConfig(top_n=TOP))
    assert result.days == [dt.date(2023, 3, 31)]
    assert result.weeks == [dt.date(2023, 3, 27)]
    for t in TABLES:
        snaps = snapshots(spark, t)
        assert len(snaps) == before[t] + 1, t
        assert snaps[-1].summary["changed-partition-count"] == "1", t

    # The incremental result equals a full recompute of the same days and weeks.
    logs = spark.table("nginx_logs.access_logs").where(
        "date BETWEEN DATE'2023-02-27' AND DATE'2023-04-02'"
    )
    days = "date BETWEEN DATE'2023-03-01' AND DATE'2023-03-31'"
    weeks = "week_start_date BETWEEN DATE'2023-02-27' AND DATE'2023-03-27'"
    for table, full, where in (
        (schema.DAILY_TOP_IPS.qualified, an.daily_top_ips(logs, TOP), days),
        (schema.DAILY_TOP_DEVICES.qualified, an.daily_top_devices(logs, TOP), days),
        (schema.WEEKLY_TOP_IPS.qualified, an.weekly_top_ips(logs, TOP), weeks),
        (schema.WEEKLY_TOP_DEVICES.qualified, an.weekly_top_devices(logs, TOP), weeks),
        (schema.WEEKLY_ANALYTICS.qualified, an.weekly_summary(logs), weeks),
    ):
        stored = spark.table(table).where(where).drop("processed_timestamp")
        assertDataFrameEqual(stored, full.where(where).select(*stored.columns))


def test_two_runs_at_once_leave_the_tables_exact(spark, new_year) -> None:
    """Two full runs from two threads of one session: each commits its six writes at once,
    to the tables the other also commits to (the metastore lock, Iceberg's own retry and the
    analytics' commit retry between them). Both land, and every table holds exactly the
    rows the transforms give over access_logs."""
    before = {t: len(snapshots(spark, t)) for t in TABLES}
    cfg = an.AnalyticsConfig(top_n=TOP, full=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: an.analytics(spark, cfg), range(2)))
    assert results[0].days == results[1].days and results[0].days
    assert {t: len(snapshots(spark, t)) for t in TABLES} == {t: n + 2 for t, n in before.items()}
    logs = spark.table("nginx_logs.access_logs")
    for table, full in (
        (schema.DAILY_TOP_IPS.qualified, an.daily_top_ips(logs, TOP)),
        (schema.DAILY_TOP_DEVICES.qualified, an.daily_top_devices(logs, TOP)),
        (schema.WEEKLY_TOP_IPS.qualified, an.weekly_top_ips(logs, TOP)),
        (schema.WEEKLY_TOP_DEVICES.qualified, an.weekly_top_devices(logs, TOP)),
        (schema.WEEKLY_ANALYTICS.qualified, an.weekly_summary(logs)),
    ):
        stored = spark.table(table).drop("processed_timestamp")
        assertDataFrameEqual(stored, full.select(*stored.columns))


def test_human_tables_rank_without_bot_requests(spark, new_year) -> None:
    """--exclude-bots: the _humans tables are the top-IP tables of the rows whose agent is
    known not to be a bot (their addresses ranked, then their paths counted, as for all)."""
    an.analytics(spark, an.AnalyticsConfig(top_n=TOP, full=True, exclude_bots=True))
    humans = spark.table("nginx_logs.access_logs").where("NOT is_bot")
    for table, full in (
        (schema.DAILY_TOP_IPS_HUMANS.qualified, an.daily_top_ips(humans, TOP)),
        (schema.WEEKLY_TOP_IPS_HUMANS.qualified, an.weekly_top_ips(humans, TOP)),
    ):
        stored = spark.table(table).drop("processed_timestamp")
        assert stored.count() > 0, table
        assertDataFrameEqual(stored, full.select(*stored.columns))
