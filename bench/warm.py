"""Warm figures (issue #37): the commands of the cold sections as whole client processes of
this home's Spark Connect server (LOGBERG_SPARK_MODE=connect), which the section starts,
warms with one query and one round of ingest and analytics (reported as `first_round`,
outside the medians: a server that has run the job before is what "warm" means, and its
first run pays the JIT's C2 compilations as a new process does), and stops at the end (also
on failure), after reading its peak memory (VmHWM). Each figure is checked as the cold one
is: counts against the generator's manifest, the five gold tables row for row against
DuckDB's over the same files. A command that fails on the server is recorded under
`errors` (the run then ends with `"ok": false`); the other warm figures are still
measured."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from bench import gold
from bench.baselines import duckdb_analytics
from bench.config import DATA, REPEATS
from bench.datasets import Dataset
from bench.lakehouse import CONNECT, IN_PROCESS, Lakehouse
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

T = TypeVar("T")
QUERY_RUNS = 10
SAME_FILES = DATA / "duckdb-gold" / "same-files"
# The bars of issue #37 (key, comparison, bar).
BARS = {
    "warm_analytics_vs_duckdb": ("<=", 2.5),
    "warm_query_s": ("<=", 1.0),
    "warm_file_to_gold_vs_duckdb": ("<=", 2.0),
    "warm_ingest_ratio_vs_duckdb": (">=", 0.8),
}


def first_line(e: BaseException) -> str:
    """The failed command and, for a command, the last line it printed (its exception)."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0].split(': [')[0]}: {lines[-1][:300]}"


def on_server(
    part: str, mode: str, errors: dict[str, str], warm: Callable[[], T], cold: Callable[[], T]
) -> tuple[T, bool]:
    """(warm(), True); when it fails on the server (connect mode; never a correctness
    error), the error under errors[part] and (cold(), False): the figures after it still
    get their tables."""
    try:
        return warm(), True
    except CorrectnessError:
        raise
    except RuntimeError as e:
        if mode == IN_PROCESS:
            raise
        errors.setdefault(part, first_line(e))
        log(f"{part} failed on the server ({first_line(e)}); in-process instead")
        return cold(), False


def compare_gold(lh: Lakehouse, what: str, duck_dir: Any = SAME_FILES) -> None:
    diff = gold.mismatches(lh.spark, duck_dir)
    if diff:
        raise CorrectnessError(f"{what}: DuckDB's gold tables differ from logberg's: {diff}")


def ingest_then_analytics(
    lh: Lakehouse, ds: Dataset, mode: str, errors: dict[str, str], repeats: int = REPEATS
) -> list[dict[str, Any]]:
    """`repeats` x (empty warehouse, `logberg ingest`, `logberg analytics`, DuckDB's analytics
    over the same data files, the rows compared), every command in `mode`. A command that
    fails on the server (connect mode) is recorded in `errors` and redone in-process, so
    the next step still has its tables; its warm figure is then missing."""
    runs = []

    def cold_ingest() -> Any:
        lh.reset()  # whatever the failed client left
        return lh.ingest(ds.uri)

    for i in range(repeats):
        what = f"{ds.spec.name} {mode} run {i + 1}"
        lh.reset()
        run: dict[str, Any] = {}
        (ri, si), warm = on_server(
            "ingest", mode, errors, lambda: lh.ingest(ds.uri, mode=mode), cold_ingest
        )
        if warm:
            run |= {"ingest_wall_s": round(ri.wall_s, 3), "ingest_session_s": si["duration"]}
            run |= {"ingest_peak_rss_mb": ri.peak_tree_rss_mb}
            run |= {"ingest_peak_proc_hwm_mb": ri.peak_proc_hwm_mb}
        check_ingest(what, si, ds.valid, ds.malformed)
        check_tables(lh, what, ds.valid, ds.malformed)
        (ra, sa), warm = on_server(
            "analytics", mode, errors, lambda: lh.analytics(mode=mode), lh.analytics
        )
        listing = DATA / "access_logs_files.txt"
        listing.write_text("\n".join(gold.access_logs_files(lh.spark)) + "\n")
        d = duckdb_analytics(["--files", str(listing)], SAME_FILES)
        compare_gold(lh, what)
        run["duckdb_analytics_wall_s"] = d["wall_s"]
        if warm:
            run |= {
                "analytics_wall_s": round(ra.wall_s, 3),
                "analytics_session_s": sa["duration"],
                "analytics_steps_s": sa.get("steps", {}),
                "analytics_peak_rss_mb": ra.peak_tree_rss_mb,
                "analytics_peak_proc_hwm_mb": ra.peak_proc_hwm_mb,
            }
        runs.append(run)
        log(
            f"{what}: ingest {took(run, 'ingest_wall_s')}, analytics "
            f"{took(run, 'analytics_wall_s')}, "
            f"DuckDB's over the same files {d['wall_s']:.1f}s, rows equal"
        )
    return runs


def took(run: dict[str, Any], key: str) -> str:
    return f"{run[key]:.1f}s" if key in run else "FAILED on the server"


def no_runs() -> list[dict[str, Any]]:
    return []


def one_process(lh: Lakehouse, ds: Dataset, mode: str) -> list[dict[str, Any]]:
    """REPEATS x `logberg run` (file -> gold) on an empty warehouse in `mode`; counts and
    the five tables checked (against DuckDB's tables of the same lines, SAME_FILES)."""
    runs = []
    for i in range(REPEATS):
        what = f"{ds.spec.name} {mode} logberg run {i + 1}"
        lh.reset()
        r, si, sa = lh.run(ds.uri, mode=mode)
        check_ingest(what, si, ds.valid, ds.malformed)
        check_tables(lh, what, ds.valid, ds.malformed)
        compare_gold(lh, what)
        runs.append(
            {
                "wall_s": round(r.wall_s, 3),
                "ingest_session_s": si["duration"],
                "analytics_session_s": sa["duration"],
                "peak_rss_mb": r.peak_tree_rss_mb,
                "peak_proc_hwm_mb": r.peak_proc_hwm_mb,
            }
        )
        log(
            f"{what}: {r.wall_s:.1f}s whole process (ingest {si['duration']:.1f}s, analytics "
            f"{sa['duration']:.1f}s), peak {r.peak_tree_rss_mb:.0f} MB, rows equal DuckDB's"
        )
    return runs


def warm_up(lh: Lakehouse) -> float:
    """Start the server and send it one untimed query; seconds to start it."""
    took = lh.connect_up()
    r = lh.spark_command(
        "warm-up query", "query", "SHOW NAMESPACES", "--format", "csv", mode=CONNECT
    )
    log(
        f"warm: Spark Connect server up on port {lh.connect_port} in {took:.1f}s (pid "
        f"{lh.connect_pid()}); warm-up query {r.wall_s:.1f}s"
    )
    return took


def queries(lh: Lakehouse) -> list[float]:
    walls = []
    for _ in range(QUERY_RUNS):
        r = lh.spark_command("logberg query", "query", FLOOR_SQL, "--format", "csv", mode=CONNECT)
        count = r.stdout.strip().splitlines()[-1]
        if not count.isdigit() or int(count) < 1:
            raise CorrectnessError(f"warm query: {FLOOR_SQL} printed {count!r}, expected runs")
        walls.append(round(r.wall_s, 3))
    log(f"warm: logberg query x{QUERY_RUNS}: median {median(walls)}s (min {min(walls)}s)")
    return walls


def bench_warm(lh: Lakehouse, ds: Dataset) -> dict[str, Any]:
    errors: dict[str, str] = {}
    out: dict[str, Any] = {"errors": errors, "sql": FLOOR_SQL}
    try:
        out["server_start_s"] = round(warm_up(lh), 3)
        log("warm: the first round on the new server (not in the medians)")
        out["first_round"] = ingest_then_analytics(lh, ds, CONNECT, errors, repeats=1)
        runs = ingest_then_analytics(lh, ds, CONNECT, errors)
        out["runs"] = runs
        out["one_process"], _ = on_server(
            "run", CONNECT, errors, lambda: one_process(lh, ds, CONNECT), no_runs
        )
        if not out["one_process"]:  # the query below needs the tables analytics made
            lh.reset()
            lh.ingest(ds.uri)
            lh.analytics()
        out["query_runs_s"] = queries(lh)
    finally:
        mem = lh.connect_down()
        out["server_peak_rss_mb"] = mem["hwm_mb"]
        out["server_rss_at_stop_mb"] = mem["rss_mb"]
        log(f"warm: Spark Connect server stopped; its peak {mem['hwm_mb']} MB (VmHWM)")
        lh.reset()
    return out


def summary(w: dict[str, Any] | None, d5: dict[str, Any], lines: int) -> dict[str, Any]:
    """The warm keys of latest.json (None where not measured)."""
    w = w or {}
    runs = w.get("runs") or []
    one = w.get("one_process") or []
    ingest = median([r["ingest_wall_s"] for r in runs if "ingest_wall_s" in r])
    analytics = median([r["analytics_wall_s"] for r in runs if "analytics_wall_s" in r])
    duck_analytics = median([r["duckdb_analytics_wall_s"] for r in runs if "analytics_wall_s" in r])
    to_gold = median([r["wall_s"] for r in one])
    first = (w.get("first_round") or [{}])[0]
    return {
        "warm_first_ingest_s": first.get("ingest_wall_s"),
        "warm_first_analytics_s": first.get("analytics_wall_s"),
        "warm_ingest_s": ingest,
        "warm_ingest_lines_per_s": rate(lines, ingest),
        # throughput over DuckDB's (>1 = faster): DuckDB's time over logberg's
        "warm_ingest_ratio_vs_duckdb": ratio(d5.get("wall_s"), ingest),
        "warm_analytics_s": analytics,
        "warm_duckdb_analytics_s": duck_analytics,
        "warm_analytics_vs_duckdb": ratio(analytics, duck_analytics),
        "warm_query_s": median(w.get("query_runs_s") or []),
        "warm_file_to_gold_s": to_gold,
        "warm_file_to_gold_vs_duckdb": ratio(to_gold, d5.get("file_to_gold_s")),
        "connect_server_peak_rss_mb": w.get("server_peak_rss_mb"),
        "warm_client_peak_rss_mb": max(
            [r[k] for r in runs for k in ("ingest_peak_rss_mb", "analytics_peak_rss_mb") if k in r]
            + [r["peak_rss_mb"] for r in one],
            default=None,
        ),
        "warm_errors": w.get("errors") or None,
    }


def verdict(value: float | None, key: str) -> str:
    op, bar = BARS[key]
    if value is None:
        return "n/a"
    met = value <= bar if op == "<=" else value >= bar
    return f"{value:.2f} ({'met' if met else 'NOT met'})"


def table_rows(res: dict[str, Any]) -> list[tuple[str, str]]:
    def f(v: Any, fmt: str = "{:.1f}") -> str:
        return "n/a" if v is None else fmt.format(v)

    return [
        (
            "warm: the server's first ingest / analytics s (not in the medians)",
            f"{f(res.get('warm_first_ingest_s'))} / {f(res.get('warm_first_analytics_s'))}",
        ),
        (
            "warm analytics s / duckdb's (same files, rows equal)",
            f"{f(res.get('warm_analytics_s'))} / {f(res.get('warm_duckdb_analytics_s'))}",
        ),
        (
            "warm analytics vs duckdb (bar: <= 2.5)",
            verdict(res.get("warm_analytics_vs_duckdb"), "warm_analytics_vs_duckdb"),
        ),
        (
            f"warm logberg query s, median of {QUERY_RUNS} (bar: <= 1.0)",
            verdict(res.get("warm_query_s"), "warm_query_s"),
        ),
        ("warm logberg run file -> gold s", f(res.get("warm_file_to_gold_s"))),
        (
            "warm logberg run vs duckdb file -> gold (bar: <= 2)",
            verdict(res.get("warm_file_to_gold_vs_duckdb"), "warm_file_to_gold_vs_duckdb"),
        ),
        ("warm ingest s (5M, whole client process)", f(res.get("warm_ingest_s"))),
        (
            "warm ingest throughput vs duckdb (bar: >= 0.8)",
            verdict(res.get("warm_ingest_ratio_vs_duckdb"), "warm_ingest_ratio_vs_duckdb"),
        ),
        (
            "peak RSS MB: Spark Connect server / warm clients",
            f"{f(res.get('connect_server_peak_rss_mb'), '{:,.0f}')} / "
            f"{f(res.get('warm_client_peak_rss_mb'), '{:,.0f}')}",
        ),
    ]
