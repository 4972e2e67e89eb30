"""Synthetic nginx access logs for logberg, with a ground-truth manifest."""

from __future__ import annotations

# Part of the run id: 0.2.0 draws its words from Faker, so a seed gives other bytes.
__version__ = "0.2.0"


def bench_lines_per_second(lines: int = 1_000_000, gzip: bool = False) -> float:
    """Generate `lines` lines into a temporary directory; returns lines per second."""
    from generator.engine import bench

    return bench(lines, gzip=gzip)


__all__ = ["__version__", "bench_lines_per_second"]
