"""File time windows and sorted request times drawn from the diurnal/weekly intensity."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta

from generator.agents import DEVICE_TYPES
from generator.model import HOUR_KEYS, class_rate

DAY = 86_400
_EPOCH = date(1970, 1, 1)
_BATCH = 1 << 20  # draws per choices() call, to bound memory


def epoch_day(d: date) -> int:
    return (d - _EPOCH).days


def windows(start: date, end: date, n: int) -> list[tuple[int, int]]:
    """[start 00:00 UTC, end+1 00:00 UTC) split into n consecutive [lo, hi) second ranges."""
    lo = epoch_day(start) * DAY
    total = (epoch_day(end) + 1) * DAY - lo
    edges = [lo + i * total // n for i in range(n + 1)]
    return list(itertools.pairwise(edges))


def iso(ts: int) -> str:
    return (datetime(1970, 1, 1) + timedelta(seconds=ts)).strftime("%Y-%m-%dT%H:%M:%SZ")


def hour_key(local_sec: int) -> int:
    """24 * is_weekend + hour of day, for a local time in epoch seconds."""
    day = local_sec // DAY
    weekend = (day + 3) % 7 >= 5  # 1970-01-01 was a Thursday
    return 24 * weekend + (local_sec % DAY) // 3600


class Intensity:
    """Requests per minute (relative) as a function of time, from the hourly class rates,
    interpolated linearly between hour midpoints so there are no steps."""

    def __init__(self, offset_sec: int) -> None:
        self.offset = offset_sec
        hourly = [sum(class_rate(d, k) for d in DEVICE_TYPES) for k in range(HOUR_KEYS)]
        self.minute: list[list[float]] = []
        for weekend in (0, 1):
            h = hourly[24 * weekend : 24 * weekend + 24]
            row = []
            for m in range(1440):
                x = (m + 0.5) / 60 - 0.5
                h0 = int(x // 1)
                f = x - h0
                row.append((1 - f) * h[h0 % 24] + f * h[(h0 + 1) % 24])
            self.minute.append(row)

    def at(self, utc_sec: int) -> float:
        local = utc_sec + self.offset
        weekend = 1 if ((local // DAY) + 3) % 7 >= 5 else 0
        return self.minute[weekend][(local % DAY) // 60]


def _counts(rng: random.Random, weights: list[float], n: int) -> list[int]:
    """How many of n lines fall in each piece.

    Dense (several lines a piece): systematic sampling over weights jittered per piece by a
    lognormal factor, which gives bursty, over-dispersed counts in O(pieces). Sparse: an
    exact multinomial by inverse CDF, so sparse lines keep Poisson-like gaps."""
    if n < 4 * len(weights):
        counts = [0] * len(weights)
        cum = list(itertools.accumulate(weights))
        pieces = range(len(weights))
        left = n
        while left:
            k = min(left, _BATCH)
            for j in rng.choices(pieces, cum_weights=cum, k=k):
                counts[j] += 1
            left -= k
        return counts
    lnv = rng.lognormvariate
    cum = list(itertools.accumulate(w * lnv(0.0, 0.3) for w in weights))
    step = cum[-1] / n
    u = rng.random() * step
    counts = []
    before = 0
    for c in cum:
        upto = min(n, max(0, math.ceil((c - u) / step)))  # points u + k*step below c
        counts.append(upto - before)
        before = upto
    counts[-1] += n - before
    return counts


def sorted_times(
    rng: random.Random, inten: Intensity, lo: int, hi: int, n: int, chunk: int
) -> Iterator[tuple[int, list[int]]]:
    """n sorted request times (epoch seconds) in [lo, hi), as (hour key, times) groups of
    at most about `chunk` times that never straddle a local hour."""
    starts: list[int] = []
    weights: list[float] = []
    t = lo
    while t < hi:
        nxt = min((t // 60 + 1) * 60, hi)
        weights.append(inten.at(t) * (nxt - t))
        starts.append(t)
        t = nxt
    starts.append(hi)
    counts = _counts(rng, weights, n)
    rnd = rng.random
    off = inten.offset
    key = -1
    full: list[int] = []  # a minute start per line in a whole minute
    part: list[int] = []  # times in the partial minutes at the window edges
    size = 0
    for j, c in enumerate(counts):
        if not c:
            continue
        s0 = starts[j]
        k = hour_key(s0 + off)
        if size and (k != key or size >= chunk):
            yield key, _seconds(rnd, full, part)
            full, part, size = [], [], 0
        key = k
        width = starts[j + 1] - s0
        if width == 60:
            full += [s0] * c
        else:
            part += [s0 + int(rnd() * width) for _ in range(c)]
        size += c
    if size:
        yield key, _seconds(rnd, full, part)


def _seconds(rnd: Callable[[], float], full: list[int], part: list[int]) -> list[int]:
    secs = [s + int(rnd() * 60) for s in full]
    secs += part
    secs.sort()
    return secs
