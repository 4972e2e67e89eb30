"""What the bench's runs share (bench.run and bench.formats): progress lines, medians and
ratios, and the correctness checks of an ingest against the generator's manifest."""

from __future__ import annotations

import statistics
import time

from bench.lakehouse import Lakehouse

# The floor: `logberg query` of the few-row table every analytics run appends to.
FLOOR_SQL = "SELECT count(*) FROM nginx_logs.analytics_runs"


class CorrectnessError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 3) if xs else None


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b (time over time: below 1 is faster than b), None when either is missing."""
    return round(a / b, 3) if a and b else None


def rate(lines: int, seconds: float | None) -> float | None:
    return round(lines / seconds, 1) if seconds else None


def check_ingest(what: str, summary: dict[str, float], valid: int, malformed: int) -> None:
    got = (int(summary["accepted"]), int(summary["rejected"]))
    if got != (valid, malformed):
        raise CorrectnessError(
            f"{what}: logberg ingest accepted/rejected {got[0]}/{got[1]} != generator manifest "
            f"valid/malformed {valid}/{malformed}"
        )


def check_tables(lh: Lakehouse, what: str, valid: int, malformed: int) -> None:
    counts = lh.table_counts()
    if (counts["access_logs"], counts["rejects"]) != (valid, malformed):
        raise CorrectnessError(
            f"{what}: tables hold {counts['access_logs']} rows / {counts['rejects']} rejects, "
            f"manifest says {valid} / {malformed}"
        )
