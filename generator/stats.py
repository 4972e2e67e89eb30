"""Ground-truth counts of valid lines per UTC day and ISO week.

Every line carries a key: the client index for a normal line, -2 - client for an
odd-but-valid line (its user agent is "-", so it counts as device "other"), and -1 for a
malformed line (no reliable day; counted per file only).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from datetime import date, timedelta
from typing import Any

from generator.agents import DEVICE_TYPES
from generator.clients import ClientPool
from generator.timeline import DAY

MALFORMED = -1
TOP_IPS = 25


def odd_key(client: int) -> int:
    return -2 - client


class DayCounts:
    """Counter of line keys per epoch day (UTC)."""

    def __init__(self) -> None:
        self.days: dict[int, Counter[int]] = {}

    def add(self, secs: list[int], keys: list[int]) -> None:
        """`secs` is sorted; `keys[i]` is the key of the line at time `secs[i]`."""
        first, last = secs[0] // DAY, secs[-1] // DAY
        for d in range(first, last + 1):
            lo = 0 if d == first else bisect_left(secs, d * DAY)
            hi = len(secs) if d == last else bisect_left(secs, (d + 1) * DAY)
            self.days.setdefault(d, Counter()).update(keys[lo:hi])


def _summary(counts: Counter[int], pool: ClientPool) -> dict[str, Any]:
    devices = dict.fromkeys(DEVICE_TYPES, 0)
    ips: Counter[str] = Counter()
    odd = 0
    for key, n in counts.items():
        if key >= 0:
            devices[DEVICE_TYPES[pool.device[key]]] += n
            ips[pool.ips[key]] += n
        elif key != MALFORMED:
            devices["other"] += n
            ips[pool.ips[-2 - key]] += n
            odd += n
    top = sorted(ips.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_IPS]
    return {
        "valid": sum(devices.values()),
        "odd_valid": odd,
        "device_types": devices,
        "bots": devices["bot"],
        "distinct_ips": len(ips),
        "top_ips": [[ip, n] for ip, n in top],
    }


def iso_week(d: date) -> tuple[str, date]:
    year, week, weekday = d.isocalendar()
    return f"{year}-W{week:02d}", d - timedelta(days=weekday - 1)


def summaries(
    counts: DayCounts, pool: ClientPool, first: date, last: date
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(per day, per ISO week, over everything) summaries of the valid lines, for every
    day from `first` to `last` (UTC dates)."""
    epoch = date(1970, 1, 1)
    days: dict[str, Any] = {}
    weeks: dict[str, tuple[date, int, Counter[int]]] = {}
    total: Counter[int] = Counter()
    for d in range((first - epoch).days, (last - epoch).days + 1):
        day = epoch + timedelta(days=d)
        c = counts.days.get(d, Counter())
        days[day.isoformat()] = _summary(c, pool)
        key, start = iso_week(day)
        _, n, wc = weeks.setdefault(key, (start, 0, Counter()))
        wc.update(c)
        weeks[key] = (start, n + 1, wc)
        total.update(c)
    week_out = {
        k: {"week_start": start.isoformat(), "days": n, **_summary(wc, pool)}
        for k, (start, n, wc) in weeks.items()
    }
    return days, week_out, _summary(total, pool)
