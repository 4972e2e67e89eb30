"""Knobs (environment variables) and the dataset sizes for each scale.

BENCH_SCALE    full (default) | small: tiny datasets, for a smoke run of the whole harness |
               large: 50M lines (bench/large.py), ingest, analytics and `logberg run`, cold and
               warm, against DuckDB; the other sections do not run
BENCH_REPEATS  repetitions per figure (default 3 at full scale, 1 at small and large); median
BENCH_GZIP     1 = gzip the generated logs (default 0: plain .log for both tools)
BENCH_SKIP     comma list of sections to skip: generator, duckdb, goaccess, ingest, warm,
               incremental, streaming, formats, kafka (at large scale: warm, cold)
BENCH_LARGE_LINES  the large dataset's line count (default 50,000,000; 100 files), to try the
               large run at a smaller size
BENCH_RESULTS  where to write the JSON (default bench/results/latest.json)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data"
SCALE = os.environ.get("BENCH_SCALE", "full").strip().lower() or "full"
if SCALE not in ("full", "small", "large"):
    raise SystemExit(f"BENCH_SCALE={SCALE!r}: expected full, small or large")
SMALL = SCALE == "small"
LARGE = SCALE == "large"
REPEATS = int(os.environ.get("BENCH_REPEATS") or (3 if SCALE == "full" else 1))
GZIP = os.environ.get("BENCH_GZIP", "0").strip().lower() in ("1", "true", "yes")
SKIP = {s.strip() for s in os.environ.get("BENCH_SKIP", "").split(",") if s.strip()}
RESULTS = Path(os.environ.get("BENCH_RESULTS") or BENCH_DIR / "results" / "latest.json")


class Sizes(TypedDict):
    """(num_files, lines_per_file) per dataset, and the generator's line count."""

    lines_1m: tuple[int, int]
    lines_5m: tuple[int, int]
    base_30d: tuple[int, int]
    one_day: tuple[int, int]
    generator_lines: int


# Per scale. Files are read whole, one task each, so the big sets have several files per core.
SCALES: dict[str, Sizes] = {
    "full": {
        "lines_1m": (4, 250_000),
        "lines_5m": (10, 500_000),
        "base_30d": (30, 30_000),
        "one_day": (1, 30_000),
        "generator_lines": 1_000_000,
    },
    "small": {
        "lines_1m": (2, 10_000),
        "lines_5m": (2, 25_000),
        "base_30d": (30, 200),
        "one_day": (1, 200),
        "generator_lines": 50_000,
    },
}
SCALES["large"] = SCALES["full"]
SIZES = SCALES[SCALE]
# The large run's line count: 100 files of equal size (BENCH_LARGE_LINES to try it smaller).
LARGE_LINES = int(os.environ.get("BENCH_LARGE_LINES") or 50_000_000)
if LARGE_LINES < 100:
    raise SystemExit(f"BENCH_LARGE_LINES={LARGE_LINES}: expected at least 100 (100 files)")
# The bar for the large run: no logberg process, the server included, above 4 GiB.
LARGE_PEAK_MB_BAR = 4096
