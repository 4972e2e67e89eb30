"""`BENCH_SCALE=large` (issue #37): 50M generated lines (100 files, four ISO weeks), cached
like the other datasets; DuckDB's ingest and analytics over them, then logberg's ingest,
analytics and `logberg run` cold (each command its own Spark) and warm (clients of this
home's Spark Connect server), every count and gold table checked as at full scale.
Reported per line (lines/s) and by peak memory of every logberg process, the server
included, against the 4 GiB bar. The other sections do not run at this scale."""

from __future__ import annotations

import shutil
import time
from typing import Any

from bench import config, datasets
from bench.baselines import bench_duckdb
from bench.config import DATA, LARGE_LINES, LARGE_PEAK_MB_BAR, REPEATS, SKIP
from bench.datasets import Dataset, Spec
from bench.lakehouse import CONNECT, IN_PROCESS, Lakehouse
from bench.shared import log, median, rate, ratio
from bench.warm import ingest_then_analytics, no_runs, on_server, one_process, warm_up

FILES = 100
BYTES_PER_LINE = 240  # the generator's combined lines average ~220 bytes (1.1 GB per 5M)
MODES = {"cold": IN_PROCESS, "warm": CONNECT}


def spec() -> Spec:
    per_file = LARGE_LINES // FILES
    name = "lines_50m" if per_file * FILES == 50_000_000 else f"lines_{per_file * FILES}"
    return Spec(name, FILES, per_file, "2025-01-06", "2025-02-02", seed=150)


def check_disk(sp: Spec) -> None:
    """The files, DuckDB's Parquet and the warehouse must fit, with 2 GB to spare."""
    root = DATA / "datasets" / "large" / sp.name
    if (root / "bench-spec.json").is_file():
        return  # cached
    DATA.mkdir(parents=True, exist_ok=True)
    need = sp.lines * BYTES_PER_LINE * 1.3 + 2e9
    free = shutil.disk_usage(DATA).free
    if free < need:
        raise SystemExit(
            f"BENCH_SCALE=large: {sp.lines:,} lines need about {need / 1e9:.0f} GB free under "
            f"{DATA}, {free / 1e9:.0f} GB are; set BENCH_LARGE_LINES lower or free space"
        )


def top(values: list[float | None]) -> float | None:
    return max((v for v in values if v is not None), default=None)


def mode_figures(runs: list[dict[str, Any]], one: list[dict[str, Any]], lines: int) -> dict:
    ingest = median([r["ingest_wall_s"] for r in runs if "ingest_wall_s" in r])
    analytics = median([r["analytics_wall_s"] for r in runs if "analytics_wall_s" in r])
    to_gold = median([r["wall_s"] for r in one])
    peaks = {
        "ingest": top([r.get("ingest_peak_proc_hwm_mb") for r in runs]),
        "analytics": top([r.get("analytics_peak_proc_hwm_mb") for r in runs]),
        "run": top([r["peak_proc_hwm_mb"] for r in one]),
    }
    return {
        "ingest_s": ingest,
        "ingest_lines_per_s": rate(lines, ingest),
        "analytics_s": analytics,
        "analytics_lines_per_s": rate(lines, analytics),
        "duckdb_analytics_s": median(
            [r["duckdb_analytics_wall_s"] for r in runs if "analytics_wall_s" in r]
        ),
        "run_s": to_gold,
        "run_lines_per_s": rate(lines, to_gold),
        "peak_proc_hwm_mb": peaks,
    }


def bench_mode(lh: Lakehouse, ds: Dataset, name: str, errors: dict[str, str]) -> dict:
    mode = MODES[name]
    out: dict[str, Any] = {}
    try:
        if mode == CONNECT:
            out["server_start_s"] = round(warm_up(lh), 3)
        runs = ingest_then_analytics(lh, ds, mode, errors if mode == CONNECT else {})
        one, _ = on_server("run", mode, errors, lambda: one_process(lh, ds, mode), no_runs)
        out |= {"runs": runs, "one_process": one} | mode_figures(runs, one, ds.lines)
    finally:
        if mode == CONNECT:
            mem = lh.connect_down()
            out["server_peak_rss_mb"] = mem["hwm_mb"]
            log(f"large warm: Spark Connect server stopped; its peak {mem['hwm_mb']} MB")
    return out


def main(res: dict[str, Any]) -> BaseException | None:
    """Fill `res` with the large run; the error that stopped it, if any."""
    sp = spec()
    check_disk(sp)
    log(f"large: dataset {sp.name} ({sp.lines:,} lines) ...")
    t0 = time.perf_counter()
    ds = datasets.ensure(sp, DATA / "datasets" / "large")
    log(
        f"large: {ds.lines:,} lines, {ds.bytes / 1e6:,.0f} MB, "
        + ("cached" if ds.generated_s is None else f"generated in {time.perf_counter() - t0:.0f}s")
    )
    res["lines"] = ds.lines
    res["datasets"] = {"large": {"path": str(ds.landing), "files": FILES, "lines": ds.lines}}
    res["datasets"]["large"] |= {"bytes": ds.bytes, "seed": sp.seed}
    res["datasets"]["large"] |= {"dates": f"{sp.start_date}..{sp.end_date}"}
    res["datasets"]["large"]["generated_s"] = (
        None if ds.generated_s is None else round(ds.generated_s, 1)
    )
    large: dict[str, Any] = {"errors": {}}
    res["large"] = large
    failed: BaseException | None = None
    if "duckdb" not in SKIP:
        large["duckdb"] = bench_duckdb(ds, analytics=True)
    lh = Lakehouse()
    try:
        took = lh.up()
        log(f"metastore up on port {lh.port} ({took:.1f}s), home {lh.home}")
        for name in MODES:
            if name not in SKIP:
                large[name] = bench_mode(lh, ds, name, large["errors"])
        lh.reset()
    except BaseException as e:  # reported after the cleanup; exit status 1
        failed = e
    finally:
        lh.down()
        log("metastore stopped")
    res.update(summary(large, ds.lines))
    if failed is None and large["errors"]:
        failed = RuntimeError(f"large warm: commands failed on the server: {large['errors']}")
    return failed


def summary(large: dict[str, Any], lines: int) -> dict[str, Any]:
    duck = large.get("duckdb") or {}
    out: dict[str, Any] = {
        "large_lines": lines,
        "large_duckdb_ingest_s": duck.get("wall_s"),
        "large_duckdb_ingest_lines_per_s": duck.get("lines_per_s"),
        "large_duckdb_file_to_gold_s": duck.get("file_to_gold_s"),
        "large_duckdb_file_to_gold_lines_per_s": rate(lines, duck.get("file_to_gold_s")),
        "large_duckdb_peak_rss_mb": duck.get("file_to_gold_peak_rss_mb"),
    }
    peaks: dict[str, float | None] = {}
    for name in MODES:
        m = large.get(name) or {}
        for key in ("ingest", "analytics", "run"):
            out[f"large_{name}_{key}_s"] = m.get(f"{key}_s")
            out[f"large_{name}_{key}_lines_per_s"] = m.get(f"{key}_lines_per_s")
            peaks[f"{name}_{key}"] = (m.get("peak_proc_hwm_mb") or {}).get(key)
        out[f"large_{name}_ingest_ratio_vs_duckdb"] = ratio(duck.get("wall_s"), m.get("ingest_s"))
        out[f"large_{name}_analytics_vs_duckdb"] = ratio(
            m.get("analytics_s"), m.get("duckdb_analytics_s")
        )
        out[f"large_{name}_run_vs_duckdb"] = ratio(m.get("run_s"), duck.get("file_to_gold_s"))
    peaks["connect_server"] = (large.get("warm") or {}).get("server_peak_rss_mb")
    measured = [v for v in peaks.values() if v]
    top = max(measured, default=None)
    return out | {
        "large_peak_rss_mb": peaks,
        "large_peak_rss_mb_max": top,
        "large_peak_rss_mb_bar": LARGE_PEAK_MB_BAR,
        "large_peak_within_bar": None if top is None else top <= LARGE_PEAK_MB_BAR,
        "large_errors": large.get("errors") or None,
        "large_lines_setting": config.LARGE_LINES,
    }


def table(res: dict[str, Any]) -> str:
    def f(v: Any, fmt: str = "{:,.0f}") -> str:
        return "n/a" if v is None else fmt.format(v)

    lines = [
        f"large: {f(res.get('large_lines'))} lines, {REPEATS} repetition(s), medians, "
        "whole processes",
        f"{'':<28} {'s':>8} {'lines/s':>10} {'vs duckdb':>10} {'peak MB':>8}",
    ]
    peaks = res.get("large_peak_rss_mb") or {}
    lines.append(
        f"{'duckdb ingest':<28} {f(res.get('large_duckdb_ingest_s'), '{:.1f}'):>8} "
        f"{f(res.get('large_duckdb_ingest_lines_per_s')):>10} {'':>10} "
        f"{f(res.get('large_duckdb_peak_rss_mb')):>8}"
    )
    lines.append(
        f"{'duckdb file -> gold':<28} {f(res.get('large_duckdb_file_to_gold_s'), '{:.1f}'):>8} "
        f"{f(res.get('large_duckdb_file_to_gold_lines_per_s')):>10}"
    )
    for name in MODES:
        for key, vs in (
            ("ingest", "ingest_ratio_vs_duckdb"),
            ("analytics", "analytics_vs_duckdb"),
            ("run", "run_vs_duckdb"),
        ):
            lines.append(
                f"{f'logberg {name} {key}':<28} {f(res.get(f'large_{name}_{key}_s'), '{:.1f}'):>8} "
                f"{f(res.get(f'large_{name}_{key}_lines_per_s')):>10} "
                f"{f(res.get(f'large_{name}_{vs}'), '{:.2f}'):>10} "
                f"{f(peaks.get(f'{name}_{key}')):>8}"
            )
    lines.append(
        f"{'spark connect server':<28} {'':>8} {'':>10} {'':>10} "
        f"{f(peaks.get('connect_server')):>8}"
    )
    top = res.get("large_peak_rss_mb_max")
    within = res.get("large_peak_within_bar")
    lines.append(
        f"peak memory of any logberg process (VmHWM): {f(top)} MB, bar <= {LARGE_PEAK_MB_BAR} MB: "
        + ("n/a" if within is None else "met" if within else "NOT met")
    )
    lines.append(
        "(ingest vs duckdb: throughput, >1 = faster; analytics and run: time, <1 = faster)"
    )
    return "\n".join(lines)
