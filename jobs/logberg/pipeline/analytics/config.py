"""The analytics job's settings and its result."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from logberg.errors import ConfigError


@dataclass(frozen=True)
class AnalyticsConfig:
    top_n: int = 10
    since: dt.date | None = None
    dates: tuple[dt.date, ...] = ()
    exclude_bots: bool = False
    full: bool = False
    latency_min_hits: int = 20  # a path's requests in a day before it can rank as slow

    def __post_init__(self) -> None:
        if self.top_n < 1:
            raise ConfigError(f"--top-n {self.top_n}: must be at least 1")
        if self.latency_min_hits < 1:
            raise ConfigError(f"--latency-min-hits {self.latency_min_hits}: must be at least 1")


@dataclass(frozen=True)
class AnalyticsResult:
    days: list[dt.date]
    weeks: list[dt.date]  # their Mondays
    ingest_runs: int
    top_n: int
    duration_s: float
    steps: Mapping[str, float] = field(default_factory=dict)  # seconds per table written
    tables: tuple[str, ...] = ()  # the tables the run wrote (names in the database)

    def summary(self) -> str:
        steps = ",".join(f"{k}:{v}" for k, v in self.steps.items())
        return (
            f"analytics: days={len(self.days)} weeks={len(self.weeks)} "
            f"ingest_runs={self.ingest_runs} top_n={self.top_n} duration={self.duration_s:.1f}s"
            + (f" steps={steps}" if steps else "")
        )
