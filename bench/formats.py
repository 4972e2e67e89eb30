"""Ingest by log format, side by side in one run (issue #22): the 5M-line `combined` ingest
with today's code and with the code from before `--log-format` (BEFORE_COMMIT, taken from git
history into bench/data), and 5M generated `ingress-nginx` lines with `--log-format
ingress-nginx`. The runs alternate, the same number of times each, on empty tables, each
checked against its manifest; medians of whole-process wall time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.config import DATA, REPEATS
from bench.datasets import Dataset
from bench.lakehouse import Lakehouse
from bench.shared import check_ingest, check_tables, log, median, ratio

REPO = Path(__file__).resolve().parents[1]
# The last commit before `--log-format` changed the line scanner.
BEFORE_COMMIT = "ecfc2cf"


def before_tree() -> Path:
    """BEFORE_COMMIT's jobs/ (git archive), with its parser jar built into the shared tools."""
    dest = DATA / f"before-{BEFORE_COMMIT}"
    if not (dest / "jobs" / "logberg" / "cli.py").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", BEFORE_COMMIT, "jobs"],
            capture_output=True,
            check=False,
        )
        if archive.returncode != 0:
            raise RuntimeError(
                f"formats: commit {BEFORE_COMMIT} is not in this clone's history "
                f"(a shallow clone? `git fetch --unshallow`): {archive.stderr.decode()[-300:]}"
            )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def before_env(lh: Lakehouse, tree: Path) -> dict[str, str]:
    from logberg_platform.local_settings import LocalSettings

    tools = str(LocalSettings.from_env().tools)
    env = {**lh.env, "PYTHONPATH": str(tree / "jobs"), "LOGBERG_TOOLS": tools}
    # The old tree's own module path (before the platform tooling had its own package).
    build = "from pathlib import Path; from logberg.platform.build.jvm import local_jar; "
    build += f"print(local_jar(Path({tools!r})))"
    subprocess.run([sys.executable, "-c", build], env=env, check=True, cwd=tree)
    return env


def class_archives(lh: Lakehouse, old: dict[str, str]) -> None:
    """Both code versions get their JVM class archive (`logberg setup cds`, named after the
    jar set), as `make setup` gives each checkout: without it a JVM starts seconds slower,
    which would be measured as the parser's cost."""
    for env in (lh.env, old):
        cmd = [sys.executable, "-m", "logberg.cli", "setup", "cds"]
        subprocess.run(cmd, env=env, check=True, cwd=REPO, capture_output=True)


def bench_formats(lh: Lakehouse, combined: Dataset, ingress: Dataset) -> dict[str, Any]:
    tree = before_tree()
    old = before_env(lh, tree)
    class_archives(lh, old)
    cases = [
        ("combined", combined, (), None),
        ("combined_before", combined, (), old),
        ("ingress_nginx", ingress, ("--log-format", "ingress-nginx"), None),
    ]
    walls: dict[str, list[float]] = {name: [] for name, *_ in cases}
    peaks: dict[str, list[float]] = {name: [] for name, *_ in cases}
    for i in range(REPEATS):
        # Each round starts with the next case, so no version always runs first.
        first = i % len(cases)
        for name, ds, extra, env in cases[first:] + cases[:first]:
            lh.reset()
            r, s = lh.ingest(ds.uri, *extra, env=env)
            what = f"formats {name} run {i + 1}"
            check_ingest(what, s, ds.valid, ds.malformed)
            check_tables(lh, what, ds.valid, ds.malformed)
            walls[name].append(r.wall_s)
            peaks[name].append(r.peak_tree_rss_mb)
            steps = " ".join(f"{n[5:]}={v:.1f}" for n, v in s.items() if n.startswith("step_"))
            log(f"{what}: ingest {r.wall_s:.1f}s whole process, {ds.lines:,} lines ({steps})")
    med = {name: median(w) for name, w in walls.items()}
    return {
        "before_commit": BEFORE_COMMIT,
        "lines": combined.lines,
        "ingest_wall_s": med,
        "peak_rss_mb": {name: max(p) for name, p in peaks.items()},
        "runs_s": walls,
        "combined_vs_before": ratio(med["combined"], med["combined_before"]),
        "ingress_vs_combined": ratio(med["ingress_nginx"], med["combined"]),
    }
