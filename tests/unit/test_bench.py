"""The bench's DuckDB baselines run and count what the generator's manifest says (the bench
stops on a mismatch, so a broken baseline would only show in `make bench`). No services."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.conftest import REPO


def run(script: str, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.splitlines()[-1]))


def test_duckdb_ingest_then_analytics_over_its_output(tmp_path: Path) -> None:
    out = tmp_path / "logs"
    subprocess.run(
        [
            sys.executable, "-m", "generator", "--output", out.as_uri(), "--num-files", "2",
            "--lines-per-file", "3000", "--start-date", "2025-01-04", "--end-date",
            "2025-01-07", "--seed", "7", "--malformed-rate", "0.01", "--no-gzip", "--quiet",
        ],
        check=True, cwd=REPO, capture_output=True,
    )  # fmt: skip
    [manifest] = (out / "raw" / "nginx" / "_manifests").glob("*.json")
    totals = json.loads(manifest.read_text())["totals"]
    ingested = run("duckdb_ingest.py", "--input", str(out), "--output", str(tmp_path / "duck"))
    assert (ingested["kept"], ingested["rejected"]) == (
        totals["valid"],
        totals["malformed_total"],
    )
    parquet = str(tmp_path / "duck" / "access_logs" / "**" / "*.parquet")
    con = duckdb.connect()
    paths, bots = con.execute(
        f"SELECT count(url_path), count(*) FILTER (WHERE is_bot) FROM read_parquet('{parquet}', "
        "hive_partitioning=true) WHERE reject_reason IS NULL"
    ).fetchall()[0]
    assert paths > 0.99 * totals["valid"] and 0 < bots < totals["valid"]

    gold = run(
        "duckdb_analytics.py", "--input", str(tmp_path / "duck"), "--output", str(tmp_path / "gold")
    )
    rows = gold["rows"]
    assert isinstance(rows, dict)
    # 4 days (Sat 2025-01-04 .. Tue 01-07) in two ISO weeks (2025-W01, W02).
    assert rows["weekly_analytics"] == 2 and rows["daily_top_devices"] > 4
    weekly = tmp_path / "gold" / "weekly_analytics.parquet"
    total = con.execute(f"SELECT sum(total_requests) FROM read_parquet('{weekly}')").fetchall()[0][
        0
    ]
    assert total == totals["valid"]


def test_warm_medians_leave_the_new_servers_first_round_out() -> None:
    from bench.warm import summary, table_rows

    run = {"ingest_wall_s": 18.0, "analytics_wall_s": 7.0, "duckdb_analytics_wall_s": 3.5}
    first = {"ingest_wall_s": 28.0, "analytics_wall_s": 13.0, "duckdb_analytics_wall_s": 3.5}
    w = {"first_round": [first], "runs": [run, run | {"ingest_wall_s": 16.0}, run]}
    got = summary(w, {"wall_s": 14.4}, 5_000_000)
    assert (got["warm_first_ingest_s"], got["warm_first_analytics_s"]) == (28.0, 13.0)
    assert (got["warm_ingest_s"], got["warm_analytics_s"]) == (18.0, 7.0)
    assert got["warm_ingest_ratio_vs_duckdb"] == 0.8 and got["warm_analytics_vs_duckdb"] == 2.0
    rows = dict(table_rows(got))
    assert rows["warm: the server's first ingest / analytics s (not in the medians)"] == (
        "28.0 / 13.0"
    )
    # a run without the warm section: nothing made up
    assert summary(None, {}, 5_000_000)["warm_first_ingest_s"] is None


def test_the_one_partition_figures_are_the_read_steps_ratios() -> None:
    """Split vs one core (the bar, 1.6x) and vs one task on every core, and one partition vs
    four, on the batches' read_parse_write step; the walls beside them."""
    from bench.kafka import split_figures

    one_core = {"wall_s": 80.0, "steps": {"read_parse_write": 50.0, "rejects": 1.0}}
    single = {"wall_s": 60.0, "steps": {"read_parse_write": 40.0, "rejects": 1.0}}
    split = {"wall_s": 40.0, "steps": {"read_parse_write": 20.0}}
    four = {"wall_s": 36.0, "steps": {"read_parse_write": 18.0}}
    got = split_figures(1_000_000, one_core, single, split, four)
    assert got["kafka_one_partition_msgs_per_s_one_core"] == 20_000.0
    assert got["kafka_one_partition_msgs_per_s_single"] == 25_000.0
    assert got["kafka_one_partition_msgs_per_s_split"] == 50_000.0
    assert got["kafka_one_partition_split_speedup"] == 2.5
    assert got["kafka_one_partition_split_speedup_met"] is True
    assert got["kafka_one_partition_split_speedup_wall"] == 2.0
    assert got["kafka_one_partition_split_vs_one_task"] == 2.0
    assert got["kafka_one_vs_four_partitions"] == 0.9
    assert got["kafka_one_vs_four_partitions_wall"] == 0.9
    slow = split_figures(
        1_000_000, one_core, single, {"wall_s": 55.0, "steps": {"read_parse_write": 40.0}}, four
    )
    assert slow["kafka_one_partition_split_speedup_met"] is False
    none = split_figures(1_000_000, {"wall_s": 1.0, "steps": {}}, single, split, four)
    assert none["kafka_one_partition_split_speedup"] is None
    assert none["kafka_one_partition_split_speedup_met"] is None
