"""Where a test run's time went, printed at its end (`make test`; `.ci/run` quotes it): the
wall time of each tier (tests/<tier>/) and of each file, setup, call and teardown summed.
A tier's time includes its fixtures' (a cluster brought up, a server started); pytest's own
`--durations` lists the slowest tests. No test asserts a time."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

TIERS: defaultdict[str, float] = defaultdict(float)
FILES: defaultdict[str, float] = defaultdict(float)
COUNTS: defaultdict[str, int] = defaultdict(int)


def record(report: pytest.TestReport) -> None:
    path = Path(report.nodeid.split("::", 1)[0])
    tier = path.parts[1] if len(path.parts) > 2 and path.parts[0] == "tests" else str(path)
    TIERS[tier] += report.duration
    FILES[str(path)] += report.duration
    if report.when == "call":
        COUNTS[tier] += 1


def summary(write: Any, slowest_files: int = 25) -> None:
    if not TIERS:
        return
    write("tier times (setup + call + teardown, seconds)", bold=True)
    for tier, seconds in sorted(TIERS.items(), key=lambda kv: -kv[1]):
        write(f"  {seconds:8.1f}  {tier}  ({COUNTS[tier]} tests)")
    write(f"  {sum(TIERS.values()):8.1f}  all")
    write(f"the {slowest_files} slowest files (seconds)", bold=True)
    for path, seconds in sorted(FILES.items(), key=lambda kv: -kv[1])[:slowest_files]:
        write(f"  {seconds:8.1f}  {path}")
