"""Exactly once under concurrency: writers released together by a barrier (no sleeps), on the
real metastore. Two ingests of the same landing, a --full beside an incremental run,
maintenance while ingests commit, analytics while an ingest commits.

The writers run as the session's commands do, on its warm Spark Connect server (each in a
server session of its own, as two users' commands); two ingests of the same landing also
run as two drivers of their own (in-process), whose commits meet only in the metastore.

The tests of rounds run two: the first meets a landing none of whose files is committed
yet, the second a landing and tables that already hold committed files, each writer's
session warm from the round before. A third round met the second's case again (and took a
third of each test's time: #54), so ROUNDS is 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from logberg.lakehouse import sql
from logberg.pipeline import analytics as an
from tests.conftest import REPO, reset_namespace
from tests.integration.modes import MODES
from tests.integration.test_ingest import counts, expected, generate

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]
WAIT_S = 900.0
HELPER = [sys.executable, "-m", "tests.helpers.barrier_run"]
ROUNDS = 2


class Writers:
    """Processes (tests/helpers/barrier_run.py) that run a logberg command per round, all
    released at once."""

    def __init__(
        self, folder: Path, rounds: int, env: dict[str, str] | None = None, **commands: list[str]
    ) -> None:
        self.folder, self.rounds = folder, rounds
        folder.mkdir(parents=True, exist_ok=True)
        self.procs = {
            name: subprocess.Popen(
                [*HELPER, str(folder), name, str(rounds), "--", *args],
                cwd=REPO,
                env={**os.environ, **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=open(folder / f"{name}.log", "w"),  # noqa: SIM115  # closed with the process
            )
            for name, args in commands.items()
        }

    def _wait(self, paths: dict[str, Path], what: str) -> None:
        """Until each writer's file exists; a writer that exits without it fails the test."""
        deadline = time.monotonic() + WAIT_S
        while not all(p.exists() for p in paths.values()):
            for name, proc in self.procs.items():
                if proc.poll() is not None and not paths[name].exists():
                    tail = (self.folder / f"{name}.log").read_text()[-3000:]
                    raise AssertionError(
                        f"{name} exited ({proc.returncode}) before {what}:\n{tail}"
                    )
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def release(self, k: int) -> dict[str, dict[str, Any]]:
        """Wait until every writer is ready for round k, release them, return their results."""
        self._wait({n: self.folder / f"ready-{n}-{k}" for n in self.procs}, f"round {k} ready")
        (self.folder / f"go-{k}").touch()
        done = {n: self.folder / f"{n}-{k}.json" for n in self.procs}
        self._wait(done, f"round {k} done")
        return {n: json.loads(p.read_text()) for n, p in done.items()}

    def close(self) -> None:
        for p in self.procs.values():
            p.wait(timeout=WAIT_S)
            assert p.returncode == 0


@contextmanager
def writers(
    folder: Path, rounds: int, env: dict[str, str] | None = None, **commands: list[str]
) -> Iterator[Writers]:
    w = Writers(folder, rounds, env, **commands)
    try:
        yield w
        w.close()
    finally:
        for p in w.procs.values():
            if p.poll() is None:
                p.kill()


def summary(result: dict[str, Any]) -> dict[str, int]:
    """The ints of an ingest's summary line (files=, lines_read=, replaced_concurrent=, ...)."""
    assert result["code"] == 0, result
    line = next(x for x in result["out"].splitlines() if x.startswith("ingest "))
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)\b", line)}


def run_row(spark: SparkSession, out: str) -> Any:
    run_id = re.search(r"^ingest (\w+):", out, re.M)
    assert run_id
    return spark.sql(
        f"SELECT * FROM nginx_logs.ingest_runs WHERE run_id = '{run_id.group(1)}'"
    ).collect()[0]


def day(k: int) -> tuple[str, ...]:
    d = f"2023-07-{k + 10:02d}"
    return ("--start-date", d, "--end-date", d, "--num-files", "3", "--lines-per-file", "400")


@pytest.mark.parametrize("mode", ["connect", "in-process"])
def test_two_ingests_of_the_same_landing_land_every_line_once(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    landing = tmp_path / "landing"
    ingest = ["ingest", "--input", landing.as_uri()]
    with writers(tmp_path / "w", ROUNDS, MODES[mode], a=ingest, b=ingest) as w:
        for k in range(ROUNDS):
            manifest = generate(landing / f"round{k}", 60 + k, *day(k))
            got = w.release(k)
            a, b = summary(got["a"]), summary(got["b"])
            assert counts(spark, manifest) == expected(manifest), f"round {k}"
            n = len(manifest["files"])
            # Each writer either read the round's files or found them in the ledger; a writer
            # that read files another one had committed says so, and so does its run row.
            assert {a["files"], b["files"]} <= {0, n} and max(a["files"], b["files"]) == n
            assert any(s["files"] == 0 or s["replaced_concurrent"] == n for s in (a, b)), (k, a, b)
            for name, s in (("a", a), ("b", b)):
                row = run_row(spark, got[name]["out"])
                assert (row.files, row.replaced_concurrent) == (
                    s["files"],
                    s["replaced_concurrent"],
                )


def test_full_ingest_beside_an_incremental_one(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    first = generate(landing / "old", 70, *day(5))
    subprocess.run(
        [sys.executable, "-m", "logberg.cli", "ingest", "--input", landing.as_uri()],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    new = generate(landing / "new", 71, *day(6))
    with writers(
        tmp_path / "w",
        1,
        full=["ingest", "--input", landing.as_uri(), "--full"],
        incremental=["ingest", "--input", landing.as_uri()],
    ) as w:
        got = w.release(0)
    assert summary(got["full"])["files"] == len(first["files"]) + len(new["files"])
    # The files the ledger listed are the full run's own to replace: only the new ones, if
    # the incremental run committed them first, were another writer's.
    assert summary(got["full"])["replaced_concurrent"] in (0, len(new["files"]))
    assert summary(got["incremental"])["files"] in (0, len(new["files"]))
    for manifest in (first, new):
        assert counts(spark, manifest) == expected(manifest)


def snapshots_readable(spark: SparkSession, table: str) -> None:
    """Every snapshot the table still references reads back (no data file of it is gone)."""
    ids = [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()]
    assert ids
    for sid in ids:
        spark.sql(f"SELECT SUM(response_size) FROM {table} VERSION AS OF {sid}").collect()


def test_maintenance_while_ingests_commit(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    maintain = [
        "maintain",
        "--table",
        "access_logs",
        "--min-input-files",
        "2",
        "--retention-days",
        "0",
        "--retain-last",
        "3",
    ]
    # One commit per file: many small data files for compaction to rewrite while they land.
    ingest = ["ingest", "--input", landing.as_uri(), "--max-bytes-per-commit", "1"]
    manifests = []
    with writers(tmp_path / "w", ROUNDS, a=ingest, b=ingest, maintain=maintain) as w:
        for k in range(ROUNDS):
            manifests.append(generate(landing / f"round{k}", 80 + k, *day(k)))
            got = w.release(k)
            n = len(manifests[-1]["files"])
            assert max(summary(got["a"])["files"], summary(got["b"])["files"]) == n
            assert got["maintain"]["code"] == 0, got["maintain"]
            assert ": ok" in got["maintain"]["out"], got["maintain"]["out"]
    for manifest in manifests:
        assert counts(spark, manifest) == expected(manifest)
    snapshots_readable(spark, "nginx_logs.access_logs")


def test_analytics_while_an_ingest_commits(spark: SparkSession, tmp_path: Path) -> None:
    reset_namespace(spark)  # analytics reads every pending ingest run of the namespace
    landing = tmp_path / "landing"
    days = ("--start-date", "2023-08-01", "--end-date", "2023-08-02", "--lines-per-file", "1000")
    generate(landing / "base", 90, *days)
    subprocess.run(
        [sys.executable, "-m", "logberg.cli", "ingest", "--input", landing.as_uri()],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    # More lines for the same days, one commit per file, by two writers, while analytics
    # reads them.
    more = generate(landing / "more", 91, *days)
    ingest = ["ingest", "--input", landing.as_uri(), "--max-bytes-per-commit", "1"]
    with writers(tmp_path / "w", 1, a=ingest, b=ingest, analytics=["analytics"]) as w:
        got = w.release(0)
    assert got["analytics"]["code"] == 0, got["analytics"]
    assert counts(spark, more) == expected(more)
    run = spark.sql(
        "SELECT source_snapshot_id, dates FROM nginx_logs.analytics_runs "
        "ORDER BY finished_at DESC LIMIT 1"
    ).collect()[0]
    assert run.source_snapshot_id is not None and run.dates
    # The gold tables are exactly what that one snapshot of access_logs gives.
    logs = an.read_at(spark, an.ACCESS_LOGS, run.source_snapshot_id)
    in_days = sql.dates_in("date", run.dates)
    logs = logs.where(in_days)
    for table, rows in (
        ("daily_top_ips", an.daily_top_ips(logs, 10)),
        ("daily_top_devices", an.daily_top_devices(logs, 10)),
    ):
        stored = spark.table(f"nginx_logs.{table}").where(in_days)
        assertDataFrameEqual(stored.drop("processed_timestamp"), rows)
