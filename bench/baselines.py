"""DuckDB's side of the comparison, each script a whole process: bench/duckdb_ingest.py
(checked against the manifest) and bench/duckdb_analytics.py (its five gold tables)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench import measure
from bench.config import DATA, REPEATS
from bench.datasets import Dataset
from bench.shared import CorrectnessError, log, median, rate

REPO = Path(__file__).resolve().parents[1]


def bench_duckdb(ds: Dataset, analytics: bool = False) -> dict[str, Any]:
    out_dir = DATA / "duckdb-out" / ds.spec.name
    runs = []
    for i in range(REPEATS):
        r = measure.run(
            [
                sys.executable,
                str(REPO / "bench" / "duckdb_ingest.py"),
                "--input",
                str(ds.landing),
                "--output",
                str(out_dir),
            ],
            cwd=REPO,
        ).check("duckdb_ingest")
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        if (summary["kept"], summary["rejected"]) != (ds.valid, ds.malformed):
            raise CorrectnessError(
                f"duckdb baseline on {ds.spec.name}: kept/rejected {summary['kept']}/"
                f"{summary['rejected']} != manifest valid/malformed {ds.valid}/{ds.malformed}"
            )
        run = {
            "wall_s": round(r.wall_s, 3),
            "in_process_s": summary["seconds"],
            "parse_write_s": summary["parse_write_s"],
            "kept": summary["kept"],
            "rejected": summary["rejected"],
            "peak_rss_mb": r.peak_tree_rss_mb,
        }
        if analytics:  # file -> gold tables: the analytics script over what ingest wrote
            a = duckdb_analytics(["--input", str(out_dir)], DATA / "duckdb-gold" / ds.spec.name)
            run |= {
                "analytics_wall_s": a["wall_s"],
                "analytics_peak_rss_mb": a["peak_rss_mb"],
                "file_to_gold_s": round(run["wall_s"] + a["wall_s"], 3),
            }
        runs.append(run)
        log(
            f"duckdb {ds.spec.name} {i + 1}/{REPEATS}: {r.wall_s:.1f}s whole process "
            f"({summary['seconds']:.1f}s in process), peak {r.peak_tree_rss_mb:.0f} MB"
            + (f"; analytics {run['analytics_wall_s']:.1f}s" if analytics else "")
        )
    wall = median([r["wall_s"] for r in runs])
    return {
        "runs": runs,
        "wall_s": wall,
        "in_process_s": median([r["in_process_s"] for r in runs]),
        "lines_per_s": rate(ds.lines, wall),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "file_to_gold_s": median([r["file_to_gold_s"] for r in runs if analytics]),
        "file_to_gold_peak_rss_mb": max(
            (max(r["peak_rss_mb"], r["analytics_peak_rss_mb"]) for r in runs if analytics),
            default=None,
        ),
    }


def duckdb_analytics(source: list[str], out_dir: Path) -> dict[str, Any]:
    """One whole-process run of bench/duckdb_analytics.py."""
    r = measure.run(
        [
            sys.executable,
            str(REPO / "bench" / "duckdb_analytics.py"),
            *source,
            "--output",
            str(out_dir),
        ],
        cwd=REPO,
    ).check("duckdb_analytics")
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    return {
        "wall_s": round(r.wall_s, 3),
        "in_process_s": summary["seconds"],
        "peak_rss_mb": r.peak_tree_rss_mb,
        "rows": summary["rows"],
        "out": out_dir,
    }
