"""The benchmark run behind `make bench`. See bench/README.md for what each figure means."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import config, datasets, gold, measure, warm
from bench.baselines import bench_duckdb, duckdb_analytics
from bench.config import DATA, REPEATS, SIZES, SKIP
from bench.datasets import Dataset, Spec
from bench.lakehouse import Lakehouse
from bench.shared import (
    FLOOR_SQL,
    CorrectnessError,
    check_ingest,
    check_tables,
    log,
    median,
    rate,
    ratio,
)

REPO = Path(__file__).resolve().parents[1]


# ---- datasets --------------------------------------------------------------------------


def specs() -> dict[str, Any]:
    f1, l1 = SIZES["lines_1m"]
    f5, l5 = SIZES["lines_5m"]
    f30, l30 = SIZES["base_30d"]
    fd, ld = SIZES["one_day"]
    days = [dt.date(2025, 3, 5) + dt.timedelta(days=i) for i in range(REPEATS)]
    return {
        "lines_1m": Spec("lines_1m", f1, l1, "2025-01-06", "2025-01-12", seed=101),
        "lines_5m": Spec("lines_5m", f5, l5, "2025-01-06", "2025-01-12", seed=105),
        "lines_5m_ingress": Spec(
            "lines_5m_ingress", f5, l5, "2025-01-06", "2025-01-12", seed=105, fmt="ingress-nginx"
        ),
        "base_30d": Spec("base_30d", f30, l30, "2025-02-03", "2025-03-04", seed=130),
        "days": [
            Spec(f"day_{d.isoformat()}", fd, ld, d.isoformat(), d.isoformat(), seed=131 + i)
            for i, d in enumerate(days)
        ],
    }


def prepare(sp: dict[str, Any]) -> dict[str, Any]:
    base = DATA / "datasets" / config.SCALE
    out: dict[str, Any] = {}
    for key, spec in sp.items():
        if isinstance(spec, list):
            out[key] = [datasets.ensure(s, base) for s in spec]
        else:
            out[key] = datasets.ensure(spec, base)
    return out


def describe(ds: Dataset) -> dict[str, Any]:
    return {
        "path": str(ds.landing),
        "files": ds.spec.num_files,
        "lines": ds.lines,
        "valid": ds.valid,
        "malformed": ds.malformed,
        "bytes": ds.bytes,
        "dates": f"{ds.spec.start_date}..{ds.spec.end_date}",
        "seed": ds.spec.seed,
        "generated_s": None if ds.generated_s is None else round(ds.generated_s, 2),
    }


# ---- sections --------------------------------------------------------------------------

# The generator's speed before its words came from Faker (issue #23), to show beside the
# current figure: bench_generator() of commit 03af81e at full scale, BENCH_GZIP=0 (1M lines,
# 3 repetitions, median lines per CPU-second). The value is the median of 20 such calls on
# 2026-11-24 on the 2-vCPU bench machine while a cluster test loaded it (range 370,529 -
# 450,265); the Faker version, interleaved with them: median 410,476 of 19 calls (351,125 -
# 444,081). Only comparable with a full-scale, uncompressed run on the same machine.
GENERATOR_BEFORE_FAKER_COMMIT = "03af81e"
GENERATOR_BEFORE_FAKER = 412_041.7  # lines per CPU-second


def bench_generator() -> dict[str, Any]:
    from generator import bench_lines_per_second

    n = SIZES["generator_lines"]
    walls, per_core = [], []
    for i in range(REPEATS):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        lps = bench_lines_per_second(n, gzip=config.GZIP)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        walls.append(round(lps, 1))
        per_core.append(round(n / cpu, 1) if cpu else lps)
        log(
            f"generator {i + 1}/{REPEATS}: {lps:,.0f} lines/s wall, {per_core[-1]:,.0f} per CPU-s "
            f"({wall:.1f}s, cpu {cpu:.1f}s)"
        )
    now = median(per_core)
    comparable = config.SCALE == "full" and not config.GZIP
    before = GENERATOR_BEFORE_FAKER if comparable else None
    log(
        f"generator: {now or 0:,.0f} lines per CPU-s; before Faker "
        f"({GENERATOR_BEFORE_FAKER_COMMIT}): "
        + (f"{before:,.0f}" if before else "not comparable (full scale, no gzip only)")
    )
    return {
        "lines": n,
        "gzip": config.GZIP,
        "lines_per_s_runs": walls,
        "lines_per_cpu_s_runs": per_core,
        "lines_per_s": median(walls),
        "lines_per_s_per_core": now,
        "before_faker": {
            "commit": GENERATOR_BEFORE_FAKER_COMMIT,
            "lines_per_s_per_core": GENERATOR_BEFORE_FAKER,
            "comparable": comparable,
        },
        "lines_per_s_per_core_before_faker": before,
        "vs_before_faker": round(now / before, 3) if now and before else None,
    }


def bench_goaccess(ds: Dataset) -> dict[str, Any] | None:
    """GoAccess over the same files, whole process, JSON report (file -> its report)."""
    exe = shutil.which("goaccess")
    if exe is None:
        log("goaccess: not installed, not measured (apt-get install goaccess)")
        return None
    files = sorted(str(p) for p in ds.landing.rglob("*.log*") if "_manifests" not in p.parts)
    report = DATA / "goaccess" / f"{ds.spec.name}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    runs = []
    for i in range(REPEATS):
        report.unlink(missing_ok=True)
        r = measure.run(
            [
                exe,
                *files,
                "--log-format=COMBINED",
                "--no-global-config",
                "--no-progress",
                "-o",
                str(report),
            ],
            cwd=REPO,
        ).check("goaccess")
        general = json.loads(report.read_text()).get("general", {})
        runs.append(
            {
                "wall_s": round(r.wall_s, 3),
                "peak_rss_mb": r.peak_tree_rss_mb,
                "valid_requests": general.get("valid_requests"),
                "failed_requests": general.get("failed_requests"),
            }
        )
        log(
            f"goaccess {ds.spec.name} {i + 1}/{REPEATS}: {r.wall_s:.1f}s whole process, "
            f"peak {r.peak_tree_rss_mb:.0f} MB, {general.get('valid_requests')} valid requests "
            f"(manifest: {ds.valid})"
        )
    return {
        "version": subprocess.run(
            [exe, "--version"], capture_output=True, text=True
        ).stdout.splitlines()[:1],
        "runs": runs,
        "wall_s": median([r["wall_s"] for r in runs]),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
    }


def ingest_and_analytics(
    lh: Lakehouse, ds: Dataset, what: str, analytics: bool = True, baseline: bool = False
) -> dict[str, Any]:
    ri, si = lh.ingest(ds.uri)
    check_ingest(what, si, ds.valid, ds.malformed)
    out: dict[str, Any] = {
        "ingest_wall_s": round(ri.wall_s, 3),
        "ingest_session_s": si["duration"],
        "ingest_peak_rss_mb": ri.peak_tree_rss_mb,
        "ingest_peak_proc_hwm_mb": ri.peak_proc_hwm_mb,
        "accepted": int(si["accepted"]),
        "rejected": int(si["rejected"]),
        "days": int(si["days"]),
        "ingest_steps_s": {k[5:]: v for k, v in si.items() if k.startswith("step_")},
    }
    if not analytics:
        return out
    ra, sa = lh.analytics()
    out |= {
        "analytics_wall_s": round(ra.wall_s, 3),
        "analytics_session_s": sa["duration"],
        "analytics_days": int(sa["days"]),
        "analytics_weeks": int(sa["weeks"]),
        "analytics_peak_rss_mb": ra.peak_tree_rss_mb,
        "analytics_steps_s": sa.get("steps", {}),
        "file_to_gold_s": round(ri.wall_s + ra.wall_s, 3),
    }
    # The HTML report of what analytics built (issue: under 1.5x the analytics run).
    rr, sr = lh.report(DATA / "report.html")
    out |= {
        "report_wall_s": round(rr.wall_s, 3),
        "report_session_s": sr["duration"],
        "report_bytes": int(sr["bytes"]),
        "report_peak_rss_mb": rr.peak_tree_rss_mb,
    }
    if not baseline:
        return out
    # The same five tables by DuckDB from the same Parquet files; equal rows or no ratio.
    listing = DATA / "access_logs_files.txt"
    listing.write_text("\n".join(gold.access_logs_files(lh.spark)) + "\n")
    d = duckdb_analytics(["--files", str(listing)], DATA / "duckdb-gold" / "same-files")
    diff = gold.mismatches(lh.spark, d["out"])
    if diff:
        raise CorrectnessError(f"{what}: DuckDB's gold tables differ from logberg's: {diff}")
    return out | {
        "duckdb_analytics_wall_s": d["wall_s"],
        "duckdb_analytics_peak_rss_mb": d["peak_rss_mb"],
        "duckdb_analytics_rows": d["rows"],
    }


def bench_ingest(lh: Lakehouse, ds: Dataset, analytics: bool) -> dict[str, Any]:
    runs = []
    for i in range(REPEATS):
        lh.reset()
        r = ingest_and_analytics(lh, ds, f"{ds.spec.name} run {i + 1}", analytics, analytics)
        check_tables(lh, f"{ds.spec.name} run {i + 1}", ds.valid, ds.malformed)
        runs.append(r)
        log(
            f"logberg {ds.spec.name} {i + 1}/{REPEATS}: ingest {r['ingest_wall_s']:.1f}s whole "
            f"process ({r['ingest_session_s']:.1f}s after session start), peak "
            f"{r['ingest_peak_rss_mb']:.0f} MB"
            + (
                f"; analytics {r['analytics_wall_s']:.1f}s ({r['analytics_session_s']:.1f}s), "
                f"DuckDB's over the same files {r['duckdb_analytics_wall_s']:.1f}s, rows equal"
                if analytics
                else ""
            )
        )
    wall = median([r["ingest_wall_s"] for r in runs])
    session = median([r["ingest_session_s"] for r in runs])
    one_process = bench_run(lh, ds) if analytics else None
    return {
        "one_process": one_process,
        "floor": bench_floor(lh) if analytics else None,
        "runs": runs,
        "ingest_wall_s": wall,
        "ingest_session_s": session,
        "ingest_startup_and_exit_s": round(wall - session, 3) if wall and session else None,
        "lines_per_s": rate(ds.lines, wall),
        "lines_per_s_after_session_start": rate(ds.lines, session),
        "analytics_wall_s": median([r["analytics_wall_s"] for r in runs if analytics]),
        "analytics_session_s": median([r["analytics_session_s"] for r in runs if analytics]),
        "analytics_peak_rss_mb": max(
            (r["analytics_peak_rss_mb"] for r in runs if analytics), default=None
        ),
        "duckdb_analytics_wall_s": median(
            [r["duckdb_analytics_wall_s"] for r in runs if analytics]
        ),
        "file_to_gold_s": median([r["file_to_gold_s"] for r in runs if analytics]),
        "report_wall_s": median([r["report_wall_s"] for r in runs if analytics]),
        "report_session_s": median([r["report_session_s"] for r in runs if analytics]),
        "peak_rss_mb": max(r["ingest_peak_rss_mb"] for r in runs),
        "peak_proc_hwm_mb": max(r["ingest_peak_proc_hwm_mb"] for r in runs),
    }


def bench_run(lh: Lakehouse, ds: Dataset) -> dict[str, Any]:
    """File -> gold tables as one `logberg run` (ingest, then analytics, in one session) on
    an empty warehouse; counts against the manifest, tables against DuckDB's (the ones
    bench_ingest's last repetition compared, from the same lines)."""
    runs = []
    for i in range(REPEATS):
        lh.reset()
        what = f"{ds.spec.name} logberg run {i + 1}"
        r, si, sa = lh.run(ds.uri)
        check_ingest(what, si, ds.valid, ds.malformed)
        check_tables(lh, what, ds.valid, ds.malformed)
        diff = gold.mismatches(lh.spark, DATA / "duckdb-gold" / "same-files")
        if diff:
            raise CorrectnessError(f"{what}: DuckDB's gold tables differ from logberg's: {diff}")
        runs.append(
            {
                "wall_s": round(r.wall_s, 3),
                "ingest_session_s": si["duration"],
                "analytics_session_s": sa["duration"],
                "analytics_steps_s": sa["steps"],
                "peak_rss_mb": r.peak_tree_rss_mb,
            }
        )
        log(
            f"logberg run {ds.spec.name} {i + 1}/{REPEATS}: {r.wall_s:.1f}s whole process "
            f"(ingest {si['duration']:.1f}s, analytics {sa['duration']:.1f}s in session), "
            f"peak {r.peak_tree_rss_mb:.0f} MB, rows equal DuckDB's"
        )
    return {
        "runs": runs,
        "wall_s": median([r["wall_s"] for r in runs]),
        "analytics_session_s": median([r["analytics_session_s"] for r in runs]),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
    }


def bench_floor(lh: Lakehouse) -> dict[str, Any]:
    """The least any logberg Spark command costs here: `logberg query` of the few-row
    analytics_runs table (Python and JVM start, the session, the metastore's first call,
    one Iceberg read, exit), whole process. No data work, so it is the fixed cost that
    every ingest and analytics process pays before it reads a line."""
    runs = []
    for i in range(REPEATS):
        r = lh.logberg("query", FLOOR_SQL, "--format", "csv").check("logberg query")
        count = r.stdout.strip().splitlines()[-1]
        if not count.isdigit() or int(count) < 1:
            raise CorrectnessError(f"floor: {FLOOR_SQL} printed {count!r}, expected the runs")
        runs.append({"wall_s": round(r.wall_s, 3), "peak_rss_mb": r.peak_tree_rss_mb})
        log(f"floor {i + 1}/{REPEATS}: logberg query of analytics_runs {r.wall_s:.1f}s")
    return {"sql": FLOOR_SQL, "runs": runs, "wall_s": median([r["wall_s"] for r in runs])}


def bench_incremental(lh: Lakehouse, base: Dataset, days: list[Dataset]) -> dict[str, Any]:
    lh.reset()
    t0 = time.perf_counter()
    setup = ingest_and_analytics(lh, base, "base_30d")
    log(f"incremental: 30-day base ingested and analysed in {time.perf_counter() - t0:.1f}s")
    valid, malformed = base.valid, base.malformed
    to_30 = []
    for i, day in enumerate(days):
        r = ingest_and_analytics(lh, day, f"{day.spec.name} onto {30 + i} days")
        valid, malformed = valid + day.valid, malformed + day.malformed
        check_tables(lh, f"{day.spec.name} onto {30 + i} days", valid, malformed)
        r["total"] = round(r["ingest_wall_s"] + r["analytics_wall_s"], 3)
        r["total_session"] = round(r["ingest_session_s"] + r["analytics_session_s"], 3)
        r["days_before"] = 30 + i
        to_30.append(r)
        log(
            f"incremental: +{day.spec.start_date} onto {30 + i} days: {r['total']:.1f}s "
            f"(in session {r['total_session']:.1f}s)"
        )
    to_0 = []
    for day in days:
        lh.reset()
        r = ingest_and_analytics(lh, day, f"{day.spec.name} onto empty")
        check_tables(lh, f"{day.spec.name} onto empty", day.valid, day.malformed)
        r["total"] = round(r["ingest_wall_s"] + r["analytics_wall_s"], 3)
        r["total_session"] = round(r["ingest_session_s"] + r["analytics_session_s"], 3)
        to_0.append(r)
        log(
            f"incremental: +{day.spec.start_date} onto empty: {r['total']:.1f}s "
            f"(in session {r['total_session']:.1f}s)"
        )
    a30 = median([r["analytics_wall_s"] for r in to_30])
    a0 = median([r["analytics_wall_s"] for r in to_0])
    m30 = median([r["total"] for r in to_30])
    m0 = median([r["total"] for r in to_0])
    s30 = median([r["total_session"] for r in to_30])
    s0 = median([r["total_session"] for r in to_0])
    return {
        "base": setup,
        "add_day_to_30_runs": to_30,
        "add_day_to_0_runs": to_0,
        "add_day_to_30_s": m30,
        "add_day_to_0_s": m0,
        "incremental_ratio": round(m30 / m0, 3) if m30 and m0 else None,
        "add_day_to_30_analytics_s": a30,
        "add_day_to_0_analytics_s": a0,
        "incremental_analytics_ratio": round(a30 / a0, 3) if a30 and a0 else None,
        "add_day_to_30_session_s": s30,
        "add_day_to_0_session_s": s0,
        "incremental_ratio_in_session": round(s30 / s0, 3) if s30 and s0 else None,
    }


# ---- report ----------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    def sh(cmd: list[str]) -> str:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return (r.stdout + r.stderr).strip()
        except OSError:
            return ""

    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = next(
        int(ln.split()[1])
        for ln in Path("/proc/meminfo").read_text().splitlines()
        if ln.startswith("MemTotal:")
    )
    import duckdb
    import pyspark

    from logberg.versions import pins

    p = pins()
    return {
        "hostname": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_gb": round(mem_kb / 1024 / 1024, 1),
        "loadavg_start": os.getloadavg(),
        "python": platform.python_version(),
        "java": sh(["java", "-version"]).splitlines()[0] if sh(["java", "-version"]) else None,
        "pyspark": pyspark.__version__,
        "iceberg": getattr(p, "iceberg", None),
        "duckdb": duckdb.__version__,
        "git_commit": sh(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
        "git_dirty": bool(sh(["git", "-C", str(REPO), "status", "--porcelain", "--", "jobs"])),
        "spark_env": {
            k: v
            for k, v in os.environ.items()
            if k in ("LOGBERG_SPARK_MASTER", "LOGBERG_DRIVER_MEMORY", "LOGBERG_SHUFFLE_PARTITIONS")
        },
    }


def table(res: dict[str, Any]) -> str:
    def f(v: Any, fmt: str = "{:,.1f}") -> str:
        return "n/a" if v is None else fmt.format(v)

    rows = [
        ("lines (main figure)", f(res["lines"], "{:,}")),
        ("duckdb lines/s (whole process, 5M)", f(res["duckdb_lines_per_s"], "{:,.0f}")),
        ("logberg ingest lines/s (whole process, 5M)", f(res["ingest_lines_per_s"], "{:,.0f}")),
        ("ratio vs duckdb (throughput, >1 = faster)", f(res["ratio_vs_duckdb"], "{:.2f}")),
        (
            "ingest lines/s after session start (5M)",
            f(res.get("ingest_lines_per_s_after_session_start"), "{:,.0f}"),
        ),
        ("analytics s (whole process, after 5M)", f(res["analytics_s"], "{:.1f}")),
        (
            "duckdb analytics s (same Parquet files, rows equal)",
            f(res["duckdb_analytics_s"], "{:.1f}"),
        ),
        ("analytics time vs duckdb (<1 = faster)", f(res["analytics_vs_duckdb"], "{:.2f}")),
        (
            "spark floor s: logberg query of a few rows (whole process)",
            f(res.get("spark_floor_s"), "{:.1f}"),
        ),
        (
            "spark floor / duckdb's whole 5M analytics",
            f(res.get("spark_floor_vs_duckdb_analytics"), "{:.2f}"),
        ),
        (
            "analytics s of one 30k-line day / vs duckdb's 5M",
            " / ".join(
                (
                    f(res.get("analytics_one_day_s"), "{:.1f}"),
                    f(res.get("analytics_one_day_vs_duckdb_5m"), "{:.2f}"),
                )
            ),
        ),
        ("report s (whole process, the 5M week's HTML)", f(res.get("report_s"), "{:.1f}")),
        ("report time vs analytics (bar: < 1.5)", f(res.get("report_vs_analytics"), "{:.2f}")),
        *warm.table_rows(res),
        ("file -> gold s: logberg (ingest + analytics)", f(res["file_to_gold_s"], "{:.1f}")),
        ("file -> gold s: duckdb (ingest + analytics)", f(res["duckdb_file_to_gold_s"], "{:.1f}")),
        (
            "file -> gold s: logberg run (one process, one session)",
            f(res.get("file_to_gold_one_process_s"), "{:.1f}"),
        ),
        (
            "analytics s in the ingest's session (logberg run)",
            f(res.get("analytics_after_ingest_session_s"), "{:.1f}"),
        ),
        ("file -> report s: goaccess (JSON)", f(res["goaccess_s"], "{:.1f}")),
        (
            "file -> gold time vs duckdb / goaccess",
            " / ".join(
                f(res[k], "{:.2f}") for k in ("file_to_gold_vs_duckdb", "file_to_gold_vs_goaccess")
            ),
        ),
        (
            "logberg run file -> gold vs duckdb / goaccess",
            " / ".join(
                f(res.get(k), "{:.2f}")
                for k in (
                    "file_to_gold_one_process_vs_duckdb",
                    "file_to_gold_one_process_vs_goaccess",
                )
            ),
        ),
        (
            "peak RSS MB file -> gold: logberg / duckdb / goaccess",
            " / ".join(
                f(res[k], "{:,.0f}")
                for k in (
                    "file_to_gold_peak_rss_mb",
                    "duckdb_file_to_gold_peak_rss_mb",
                    "goaccess_peak_rss_mb",
                )
            ),
        ),
        (
            "incremental analytics ratio (+1 day onto 30 / 0)",
            f(res["incremental_analytics_ratio"], "{:.2f}"),
        ),
        ("incremental ratio (+1 day onto 30 / onto 0)", f(res["incremental_ratio"], "{:.2f}")),
        ("generator lines/s per core", f(res["generator_lines_per_s_per_core"], "{:,.0f}")),
        (
            f"generator lines/s per core before Faker ({GENERATOR_BEFORE_FAKER_COMMIT})",
            f(res.get("generator_lines_per_s_per_core_before_faker"), "{:,.0f}"),
        ),
        ("peak RSS MB (ingest tree, 5M)", f(res["peak_rss_mb"], "{:,.0f}")),
        (
            "ingest s 5M: combined / before --log-format / ingress-nginx",
            " / ".join(
                f((res.get("formats") or {}).get("ingest_wall_s", {}).get(k))
                for k in ("combined", "combined_before", "ingress_nginx")
            ),
        ),
        (
            "combined vs before --log-format (time, bar: <= 1.0 within noise)",
            f((res.get("formats") or {}).get("combined_vs_before"), "{:.2f}"),
        ),
        (
            "ingress-nginx vs combined (time)",
            f((res.get("formats") or {}).get("ingress_vs_combined"), "{:.2f}"),
        ),
        (
            "streaming latency s",
            "not measured"
            if res["streaming_latency_s"] is None
            else f(res["streaming_latency_s"], "{:.1f}"),
        ),
    ]
    w = max(len(a) for a, _ in rows)
    lines = [f"{'figure':<{w}}  value", f"{'-' * w}  {'-' * 14}"]
    lines += [f"{a:<{w}}  {b}" for a, b in rows]
    per = res.get("per_dataset", {})
    if per:
        lines.append("")
        lines.append(
            f"{'dataset':<10} {'lines':>10} {'duckdb s':>9} {'ingest s':>9} "
            f"{'in-session':>10} {'analytics s':>11} {'ingest MB':>9}"
        )
        for name, d in per.items():
            lines.append(
                f"{name:<10} {d['lines']:>10,} {f(d.get('duckdb_wall_s')):>9} "
                f"{f(d.get('ingest_wall_s')):>9} {f(d.get('ingest_session_s')):>10} "
                f"{f(d.get('analytics_wall_s')):>11} {f(d.get('ingest_peak_rss_mb'), '{:,.0f}'):>9}"
            )
    return "\n".join(lines)


def main() -> int:
    started = time.perf_counter()
    res: dict[str, Any] = {
        "scale": config.SCALE,
        "repeats": REPEATS,
        "gzip": config.GZIP,
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
    }
    log(f"scale={config.SCALE} repeats={REPEATS} gzip={config.GZIP} skip={sorted(SKIP) or '-'}")
    if config.LARGE:  # the large dataset alone (bench/large.py)
        from bench import large

        return finish(res, large.main(res), large.table(res), started)
    sp = specs()
    log("datasets: generating what is not cached under bench/data/datasets ...")
    ds = prepare(sp)
    res["datasets"] = {
        k: ([describe(d) for d in v] if isinstance(v, list) else describe(v)) for k, v in ds.items()
    }
    main_ds: Dataset = ds["lines_5m"]
    res["lines"] = main_ds.lines

    res["generator"] = None if "generator" in SKIP else bench_generator()

    res["duckdb"] = {}
    if "duckdb" not in SKIP:
        for key in ("lines_1m", "lines_5m"):
            res["duckdb"][key] = bench_duckdb(ds[key], analytics=key == "lines_5m")
    res["goaccess"] = None if "goaccess" in SKIP else bench_goaccess(ds["lines_5m"])

    res["logberg"] = {}
    res["formats"] = None
    res["incremental"] = None
    res["streaming"] = None
    res["warm"] = None
    res["kafka"] = None
    lh = Lakehouse()
    failed: BaseException | None = None
    try:
        if not {"ingest", "warm", "incremental", "streaming", "formats", "kafka"} <= SKIP:
            took = lh.up()
            log(f"metastore up on port {lh.port} ({took:.1f}s), home {lh.home}")
            if "streaming" not in SKIP and lh.has_follow():
                from bench.streaming import bench_streaming

                res["streaming"] = bench_streaming(lh, repeats=3)
                res["streaming"]["note"] = "file landed -> rows in access_logs and daily_top_ips"
            if "ingest" not in SKIP:
                # analytics is timed after the 5M ingest only (the time budget of `make bench`)
                for key in ("lines_1m", "lines_5m"):
                    res["logberg"][key] = bench_ingest(lh, ds[key], analytics=key == "lines_5m")
            if "kafka" not in SKIP:  # after the cold ingest: its file ingest is the bar
                from bench.kafka import bench_kafka

                cold = res["logberg"].get("lines_5m", {}).get("ingest_wall_s")
                res["kafka"] = bench_kafka(lh, ds["lines_5m"], cold)
            if "warm" not in SKIP:  # the Spark Connect server runs in this section only
                res["warm"] = warm.bench_warm(lh, ds["lines_5m"])
            if "incremental" not in SKIP:
                res["incremental"] = bench_incremental(lh, ds["base_30d"], ds["days"])
            if "formats" not in SKIP:
                from bench.formats import bench_formats

                res["formats"] = bench_formats(lh, ds["lines_5m"], ds["lines_5m_ingress"])
            lh.reset()
    except BaseException as e:  # reported after the cleanup below; exit status 1
        failed = e
    finally:
        lh.down()
        log("metastore stopped")

    d5 = res["duckdb"].get("lines_5m", {})
    l5 = res["logberg"].get("lines_5m", {})
    inc = res["incremental"] or {}
    one = l5.get("one_process") or {}
    floor = l5.get("floor") or {}
    res.update(
        {
            "duckdb_lines_per_s": d5.get("lines_per_s"),
            "ingest_lines_per_s": l5.get("lines_per_s"),
            "ingest_lines_per_s_after_session_start": l5.get("lines_per_s_after_session_start"),
            "ratio_vs_duckdb": (
                round(l5["lines_per_s"] / d5["lines_per_s"], 3)
                if l5.get("lines_per_s") and d5.get("lines_per_s")
                else None
            ),
            "analytics_s": l5.get("analytics_wall_s"),
            "analytics_session_s": l5.get("analytics_session_s"),
            "duckdb_analytics_s": l5.get("duckdb_analytics_wall_s"),
            "analytics_vs_duckdb": ratio(
                l5.get("analytics_wall_s"), l5.get("duckdb_analytics_wall_s")
            ),
            "file_to_gold_s": l5.get("file_to_gold_s"),
            "report_s": l5.get("report_wall_s"),
            "report_session_s": l5.get("report_session_s"),
            "report_vs_analytics": ratio(l5.get("report_wall_s"), l5.get("analytics_wall_s")),
            "duckdb_file_to_gold_s": d5.get("file_to_gold_s"),
            "goaccess_s": (res["goaccess"] or {}).get("wall_s"),
            "file_to_gold_vs_duckdb": ratio(l5.get("file_to_gold_s"), d5.get("file_to_gold_s")),
            "file_to_gold_vs_goaccess": ratio(
                l5.get("file_to_gold_s"), (res["goaccess"] or {}).get("wall_s")
            ),
            "file_to_gold_one_process_s": one.get("wall_s"),
            "analytics_after_ingest_session_s": one.get("analytics_session_s"),
            "file_to_gold_one_process_vs_duckdb": ratio(
                one.get("wall_s"), d5.get("file_to_gold_s")
            ),
            "file_to_gold_one_process_vs_goaccess": ratio(
                one.get("wall_s"), (res["goaccess"] or {}).get("wall_s")
            ),
            "file_to_gold_one_process_peak_rss_mb": one.get("peak_rss_mb"),
            "file_to_gold_peak_rss_mb": max(
                (v for v in (l5.get("peak_rss_mb"), l5.get("analytics_peak_rss_mb")) if v),
                default=None,
            ),
            "duckdb_file_to_gold_peak_rss_mb": d5.get("file_to_gold_peak_rss_mb"),
            "goaccess_peak_rss_mb": (res["goaccess"] or {}).get("peak_rss_mb"),
            # What the bars of issue #21 are up against: the fixed cost of a Spark process
            # (see bench_floor) and analytics over one 30k-line day, both whole processes.
            "spark_floor_s": floor.get("wall_s"),
            "spark_floor_vs_duckdb_analytics": ratio(
                floor.get("wall_s"), l5.get("duckdb_analytics_wall_s")
            ),
            "analytics_one_day_s": inc.get("add_day_to_0_analytics_s"),
            "analytics_one_day_vs_duckdb_5m": ratio(
                inc.get("add_day_to_0_analytics_s"), l5.get("duckdb_analytics_wall_s")
            ),
            "incremental_analytics_ratio": inc.get("incremental_analytics_ratio"),
            "incremental_ratio": inc.get("incremental_ratio"),
            "incremental_ratio_in_session": inc.get("incremental_ratio_in_session"),
            "generator_lines_per_s_per_core": (res["generator"] or {}).get("lines_per_s_per_core"),
            "generator_lines_per_s_per_core_before_faker": (res["generator"] or {}).get(
                "lines_per_s_per_core_before_faker"
            ),
            "peak_rss_mb": l5.get("peak_rss_mb"),
            "duckdb_peak_rss_mb": d5.get("peak_rss_mb"),
            "streaming_latency_s": (res["streaming"] or {}).get("latency_s"),
            "streaming_note": "not measured: `logberg ingest --follow` does not exist yet"
            if res["streaming"] is None
            else res["streaming"]["note"],
        }
    )
    res.update(warm.summary(res["warm"], d5, main_ds.lines))
    res.update({k: v for k, v in (res["kafka"] or {}).items() if k.startswith("kafka_")})
    if failed is None and res["warm_errors"]:
        failed = RuntimeError(
            f"warm: commands failed on the Spark Connect server: {res['warm_errors']}"
        )
    res["per_dataset"] = {
        key: {
            "lines": ds[key].lines,
            "duckdb_wall_s": res["duckdb"].get(key, {}).get("wall_s"),
            "ingest_wall_s": res["logberg"].get(key, {}).get("ingest_wall_s"),
            "ingest_session_s": res["logberg"].get(key, {}).get("ingest_session_s"),
            "analytics_wall_s": res["logberg"].get(key, {}).get("analytics_wall_s"),
            "ingest_peak_rss_mb": res["logberg"].get(key, {}).get("peak_rss_mb"),
        }
        for key in ("lines_1m", "lines_5m")
    }
    return finish(res, failed, table(res), started)


def finish(res: dict[str, Any], failed: BaseException | None, text: str, started: float) -> int:
    """Write latest.json (partial, `"ok": false`, after a failure) and print the table."""
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["total_s"] = round(time.perf_counter() - started, 1)
    res["ok"] = failed is None
    if failed is not None:
        res["error"] = f"{type(failed).__name__}: {failed}"
    config.RESULTS.parent.mkdir(parents=True, exist_ok=True)
    config.RESULTS.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print()
    print(text)
    print()
    if failed is not None:
        log(f"FAILED: {res['error']}")
        log(f"partial results in {config.RESULTS}")
        return 1
    log(f"wrote {config.RESULTS} in {res['total_s']:.0f}s")
    return 0
