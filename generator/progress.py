"""A one-line progress bar on stderr: percent, lines, lines/s and bytes."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress:
    def __init__(self, total_lines: int, enabled: bool, stream: TextIO | None = None) -> None:
        self.total = total_lines
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.lines = 0
        self.bytes = 0
        self.t0 = time.monotonic()
        self._last = 0.0

    def add(self, lines: int, nbytes: int) -> None:
        self.lines += lines
        self.bytes += nbytes
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= 0.2:
                self._last = now
                self._draw(now)

    def rate(self) -> float:
        return self.lines / max(time.monotonic() - self.t0, 1e-9)

    def _draw(self, now: float) -> None:
        frac = self.lines / self.total if self.total else 1.0
        bar = "#" * int(frac * 24)
        rate = self.lines / max(now - self.t0, 1e-9)
        self.stream.write(
            f"\rgenerate [{bar:<24}] {frac:6.1%}  {self.lines:,}/{self.total:,} lines"
            f"  {rate:,.0f} lines/s  {_human(self.bytes)} "
        )
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
