"""Streaming latency: how long from a file landing (an atomic rename into the landing
prefix) until its rows are in access_logs and its day is in daily_top_ips, with
`logberg ingest --follow` running. Median over several files, after one warm-up file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import measure
from bench.config import DATA
from bench.lakehouse import LOGBERG, REPO, Lakehouse

LINES = 2000
TIMEOUT_S = 240.0


def _stage_file(staging: Path, day: str, seed: int) -> tuple[Path, str]:
    """Generate one gzip file for `day`; returns (its path under staging, relative path)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "--output",
            staging.as_uri(),
            "--num-files",
            "1",
            "--lines-per-file",
            str(LINES),
            "--start-date",
            day,
            "--end-date",
            day,
            "--seed",
            str(seed),
            "--quiet",
        ],
        check=True,
        cwd=REPO,
        capture_output=True,
    )
    [path] = (staging / "raw" / "nginx" / f"dt={day}").glob("*.log*")
    return path, str(path.relative_to(staging))


def _landed(lh: Lakehouse, name: str, day: str) -> tuple[bool, bool]:
    catalog = lh.spark.catalog
    if not (
        catalog.tableExists("nginx_logs.access_logs")
        and catalog.tableExists("nginx_logs.daily_top_ips")
    ):
        return False, False  # the stream has not created its tables yet
    return _probe(lh, name, day)


def _probe(lh: Lakehouse, name: str, day: str) -> tuple[bool, bool]:
    spark = lh.spark
    rows = spark.sql(
        "SELECT COUNT(*) FROM nginx_logs.access_logs "
        f"WHERE date = DATE'{day}' AND source_file LIKE '%{name}'"
    ).first()[0]
    top = spark.sql(
        f"SELECT COUNT(*) FROM nginx_logs.daily_top_ips WHERE date = DATE'{day}'"
    ).first()[0]
    return rows > 0, top > 0


def bench_streaming(lh: Lakehouse, repeats: int) -> dict[str, Any]:
    root = DATA / "stream"
    shutil.rmtree(root, ignore_errors=True)
    landing, staging = root / "landing", root / "staging"
    landing.mkdir(parents=True)
    lh.reset()
    log_file = root / "follow.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [
                LOGBERG,
                "ingest",
                "--follow",
                "--input",
                landing.as_uri(),
                "--trigger-seconds",
                "1",
                "--checkpoint",
                (root / "checkpoint").as_uri(),
            ],
            env=lh.env,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    to_rows: list[float] = []
    to_tops: list[float] = []
    try:
        for i in range(repeats + 1):  # the first file warms the stream up; not counted
            day = f"2030-01-{i + 1:02d}"
            src, rel = _stage_file(staging / str(i), day, 1000 + i)
            dst = landing / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.monotonic()
            os.rename(src, dst)  # atomic: the stream never sees a partial file
            rows_at = tops_at = None
            while time.monotonic() - t0 < TIMEOUT_S:
                if proc.poll() is not None:
                    raise RuntimeError(f"the stream exited; see {log_file}")
                has_rows, has_top = _landed(lh, dst.name, day)
                now = time.monotonic() - t0
                rows_at = rows_at if rows_at is not None or not has_rows else now
                if has_top:
                    tops_at = now
                    break
                time.sleep(0.5)
            if rows_at is None or tops_at is None:
                raise RuntimeError(f"file {dst.name} did not land within {TIMEOUT_S:.0f}s")
            if i:
                to_rows.append(rows_at)
                to_tops.append(tops_at)
    finally:
        measure.kill_tree(proc.pid)
        proc.wait()
    lh.reset()
    to_rows.sort()
    to_tops.sort()
    return {
        "runs_to_access_logs_s": to_rows,
        "runs_to_daily_top_s": to_tops,
        "latency_to_access_logs_s": to_rows[len(to_rows) // 2],
        "latency_s": to_tops[len(to_tops) // 2],
        "lines_per_file": LINES,
        "trigger_seconds": 1,
    }
