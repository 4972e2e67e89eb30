"""`logberg maintain` and time travel / `logberg rollback`, against the real metastore:
FILES small ingests compacted with identical results, snapshots expired, orphans removed only past
the margin; `query --as-of` sees the past and `rollback` restores it."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest

from logberg.errors import ConfigError
from logberg.lakehouse import tables
from logberg.lakehouse.schema import INGEST_TABLES
from logberg.pipeline import maintenance as maintain
from logberg.pipeline import rollback
from logberg.pipeline.ingest.batch import ingest
from logberg.pipeline.ingest.config import IngestConfig
from tests.conftest import reset_namespace, run_logberg
from tests.integration.test_ingest import generate

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

TABLE = "nginx_logs.access_logs"
# Small files, one commit each, over two days: 10 per partition, twice rewrite_data_files'
# default min-input-files (5), so compaction has work in each (one ingest commit is ~2 s).
FILES = 20
DAYS = "'2024-02-01', '2024-02-02'"
AGGREGATE = (
    f"SELECT date, COUNT(*), COUNT(DISTINCT event_id), SUM(response_size), "
    f"SUM(status_code), MIN(timestamp), MAX(timestamp), COUNT(DISTINCT ip_address) "
    f"FROM {TABLE} WHERE date IN ({DAYS}) GROUP BY date ORDER BY date"
)


def data_files(spark: Any) -> int:
    return int(
        spark.sql(
            f"SELECT COUNT(*) FROM {TABLE}.data_files WHERE partition.date IN ({DAYS})"
        ).collect()[0][0]
    )


def current_snapshot(spark: Any) -> int:
    return int(
        spark.sql(f"SELECT snapshot_id FROM {TABLE}.refs WHERE name = 'main'").collect()[0][0]
    )


def row_count(spark: Any) -> int:
    return int(spark.sql(f"SELECT COUNT(*) FROM {TABLE}").collect()[0][0])


def table_location(spark: Any) -> Path:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {TABLE}").collect()
    loc = next(r.data_type for r in rows if r.col_name == "Location")
    return Path(loc.removeprefix("file:").replace("///", "/"))


def ingest_one(spark: Any, out: Path, seed: int) -> None:
    day = ("--start-date", "2024-02-03", "--end-date", "2024-02-03")
    generate(out, seed, "--num-files", "1", "--lines-per-file", "20", *day)
    ingest(spark, IngestConfig(inputs=(out.as_uri(),)))


@pytest.fixture(scope="module")
def small_ingests(spark: Any, lakehouse: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FILES tiny files, ingested with one commit each: at least FILES small data files."""
    reset_namespace(spark)  # snapshot and file counts below are this module's own
    out = tmp_path_factory.mktemp("landing-maintain")
    generate(
        out,
        41,
        "--num-files",
        str(FILES),
        "--lines-per-file",
        "30",
        "--start-date",
        "2024-02-01",
        "--end-date",
        "2024-02-02",
        "--malformed-rate",
        "0.05",
    )
    one_commit_per_file = IngestConfig(inputs=(out.as_uri(),), max_bytes_per_commit=1, verify=False)
    res = ingest(spark, one_commit_per_file)
    assert res.total.files == FILES
    return out


def test_orphan_margin_below_three_days_is_refused(lakehouse: Any) -> None:
    with pytest.raises(ConfigError, match="--orphan-margin-days"):
        maintain.MaintainConfig(orphan_margin_days=1)
    r = run_logberg(["maintain", "--orphan-margin-days", "2.5"])
    assert r.returncode == 2 and "--orphan-margin-days" in r.stderr


@pytest.mark.slow
def test_maintain_compacts_and_expires_with_identical_results(
    spark: Any, small_ingests: Path
) -> None:
    files_before = data_files(spark)
    assert files_before >= FILES
    before = spark.sql(AGGREGATE).collect()
    snapshots_before = spark.sql(f"SELECT COUNT(*) FROM {TABLE}.snapshots").collect()[0][0]
    assert snapshots_before >= FILES

    r = run_logberg(
        ["maintain", "--table", "access_logs", "--retention-days", "0", "--retain-last", "1"],
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "nginx_logs.access_logs: data files" in r.stdout

    assert data_files(spark) * 5 <= files_before
    assert spark.sql(AGGREGATE).collect() == before
    assert spark.sql(f"SELECT COUNT(*) FROM {TABLE}.snapshots").collect()[0][0] == 1
    run = spark.sql(
        "SELECT * FROM nginx_logs.maintenance_runs WHERE table_name = 'nginx_logs.access_logs' "
        "ORDER BY finished_at DESC LIMIT 1"
    ).collect()[0]
    assert run.status == "ok" and run.retries == 0
    assert run.data_files_after < run.data_files_before
    assert run.snapshots_before >= FILES and run.snapshots_after == 1
    assert run.records_after == run.records_before


@pytest.mark.slow
def test_orphans_removed_only_past_the_margin(spark: Any, small_ingests: Path) -> None:
    orphan = table_location(spark) / "data" / "date=2024-02-01" / "00000-0-planted-orphan.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    # access_logs has no table sort order: the sort strategy sorts by tables.ACCESS_SORT.
    assert not maintain.has_sort_order(spark, TABLE)
    cfg = maintain.MaintainConfig(tables=(TABLE,), strategy="sort", orphan_margin_days=3)

    day = 24 * 3600
    os.utime(orphan, (time.time() - day, time.time() - day))
    [report] = maintain.maintain(spark, cfg)
    assert report.status == "ok" and report.orphans_removed == 0
    assert orphan.exists()

    os.utime(orphan, (time.time() - 10 * day, time.time() - 10 * day))
    [report] = maintain.maintain(spark, cfg)
    assert report.status == "ok" and report.orphans_removed == 1
    assert not orphan.exists()


@pytest.mark.slow
def test_time_travel_and_rollback(spark: Any, lakehouse: Any, tmp_path: Path) -> None:
    ingest_one(spark, tmp_path / "0", 44)
    snap, count = current_snapshot(spark), row_count(spark)
    ingest_one(spark, tmp_path / "a", 42)
    assert row_count(spark) > count

    # The past, through the CLI and in plain SQL.
    r = run_logberg(
        ["query", f"SELECT COUNT(*) AS n FROM {TABLE}", "--as-of", str(snap), "--format", "csv"],
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines() == ["n", str(count)]
    assert spark.sql(f"SELECT COUNT(*) FROM {TABLE} VERSION AS OF {snap}").collect()[0][0] == count

    r = run_logberg(["rollback", "access_logs", "--to", str(snap)])
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"current snapshot {snap}" in r.stdout
    assert current_snapshot(spark) == snap and row_count(spark) == count

    # By timestamp: back to the state before another ingest.
    # A timestamp strictly between the rollback (the last history entry) and the next commit.
    last = spark.sql(
        f"SELECT date_format(max(made_current_at), 'yyyy-MM-dd HH:mm:ss.SSS') FROM {TABLE}.history"
    ).collect()[0][0]
    cut = rollback.parse_timestamp(last) + dt.timedelta(milliseconds=1)
    ingest_one(spark, tmp_path / "b", 43)
    assert row_count(spark) > count
    as_of_cut = f"SELECT COUNT(*) FROM {TABLE} FOR SYSTEM_TIME AS OF '{cut.isoformat(' ')}'"
    assert spark.sql(as_of_cut).collect()[0][0] == count
    done = rollback.rollback(spark, rollback.RollbackConfig(TABLE, timestamp=cut))
    assert done.current == snap and done.previous != snap and row_count(spark) == count


def test_rollback_refuses_unknown_table_and_snapshot(spark: Any, lakehouse: Any) -> None:
    tables.ensure(spark, INGEST_TABLES)
    with pytest.raises(ConfigError, match="TABLE"):
        rollback.rollback(spark, rollback.RollbackConfig("nginx_logs.no_such_table", 1))
    with pytest.raises(ConfigError, match="--to 12345"):
        rollback.rollback(spark, rollback.RollbackConfig(TABLE, 12345))
    with pytest.raises(ConfigError, match="TABLE"):
        maintain.table_name("bad-name!", "TABLE")
    r = run_logberg(["rollback", "access_logs"])
    assert r.returncode == 2
