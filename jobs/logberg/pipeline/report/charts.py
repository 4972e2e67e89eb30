"""Inline SVG charts: plain data in, markup out, no script.

Colours are CSS classes (`page.STYLE` defines them for the light and the dark theme), every
mark carries a <title> (the browser's tooltip), and labels are thinned so that none
overlap: each chart is drawn on a fixed grid (`WIDTH` units wide) and the page never
shrinks it below that width (it scrolls instead).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 960  # drawing units; the page shows charts at least this many px wide
CHAR = 7.5  # width of one label character at the page's 12px label size, with margin
GAP = 10  # at least this much space between two labels


@dataclass(frozen=True)
class Series:
    name: str
    css: str  # the class that colours its marks
    values: Sequence[float]


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def nice_max(v: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at or above v (an axis top)."""
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    return next(m * exp for m in (1, 2, 2.5, 5, 10) if m * exp >= v)


def compact(v: float) -> str:
    """1234 -> 1.2k, 5600000 -> 5.6M (axis labels)."""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.3g}"


def thin(labels: Sequence[str], slot: float) -> list[int]:
    """Indexes of the labels to draw: every k-th non-empty one, k the smallest step at
    which the widest label fits between two drawn ones."""
    marks = [i for i, label in enumerate(labels) if label]
    if not marks:
        return []
    widest = max(len(labels[i]) for i in marks) * CHAR + GAP
    gap = min((b - a for a, b in itertools.pairwise(marks)), default=len(labels))
    step = max(1, math.ceil(widest / max(gap * slot, 1e-9)))
    return marks[::step]


def legend(series: Sequence[Series], x: float, y: float) -> str:
    out, pos = [], x
    for s in series:
        out.append(
            f'<rect class="{s.css}" x="{_num(pos)}" y="{_num(y - 9)}" width="10" height="10"/>'
            f'<text class="label" x="{_num(pos + 14)}" y="{_num(y)}">{escape(s.name)}</text>'
        )
        pos += 14 + len(s.name) * CHAR + 16
    return "".join(out)


def stacked_columns(
    labels: Sequence[str],
    series: Sequence[Series],
    tips: Sequence[str],
    unit: Callable[[float], str] = compact,
    height: int = 240,
) -> str:
    """Columns stacked bottom-up in `series` order; `labels` under the x axis (an empty
    string: no label at that column), `tips[i]` the tooltip of column i."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    ymax = nice_max(max(totals, default=0))
    ticks = [unit(ymax * k / 4) for k in range(5)]
    # The y axis' labels, right-aligned, fit to the left of the plot.
    left = max(40, round(max(len(t) for t in ticks) * CHAR) + 12)
    right, top, bottom = 8, 24, 28
    n = max(len(labels), 1)
    slot = (WIDTH - left - right) / n
    plot_h = height - top - bottom
    out = [_open(height, "columns")]
    for k, tick in enumerate(ticks):
        y = top + plot_h - plot_h * k / 4
        out.append(
            f'<line class="grid" x1="{left}" x2="{WIDTH - right}" y1="{_num(y)}" y2="{_num(y)}"/>'
            f'<text class="label axis-y" x="{left - 6}" y="{_num(y + 4)}">{escape(tick)}</text>'
        )
    bar_w = max(slot * 0.85, 0.5)
    for i in range(len(labels)):
        base = float(top + plot_h)
        x = left + i * slot + (slot - bar_w) / 2
        for s in series:
            v = s.values[i]
            if v <= 0:
                continue
            h = plot_h * v / ymax
            base -= h
            out.append(
                f'<rect class="mark {s.css}" x="{_num(x)}" y="{_num(base)}" '
                f'width="{_num(bar_w)}" height="{_num(h)}">'
                f"<title>{escape(tips[i])}: {escape(s.name)} {unit(v)}</title></rect>"
            )
    for i in thin(labels, slot):
        x = left + i * slot
        if x + 2 + len(labels[i]) * CHAR > WIDTH:
            continue  # would run off the right edge
        out.append(
            f'<line class="tick" x1="{_num(x)}" x2="{_num(x)}" y1="{top + plot_h}" '
            f'y2="{top + plot_h + 4}"/>'
            f'<text class="label" x="{_num(x + 2)}" y="{height - 10}">{escape(labels[i])}</text>'
        )
    out.append(legend(series, left, 14))
    out.append("</svg>")
    return "".join(out)


def heatmap(
    rows: Sequence[str], cols: Sequence[str], values: Sequence[Sequence[float]], what: str
) -> str:
    """A grid of cells shaded by value (rows x cols); each cell's tooltip is its value and
    `what` it counts."""
    left, top, cell_h = 48, 22, 22
    cell_w = (WIDTH - left - 8) / max(len(cols), 1)
    height = top + cell_h * len(rows) + 6
    vmax = max((v for row in values for v in row), default=0) or 1
    out = [_open(height, "heatmap")]
    for j in thin(cols, cell_w):
        out.append(
            f'<text class="label" x="{_num(left + j * cell_w + 2)}" y="{top - 8}">'
            f"{escape(cols[j])}</text>"
        )
    for i, name in enumerate(rows):
        y = top + i * cell_h
        out.append(f'<text class="label" x="4" y="{_num(y + cell_h * 0.7)}">{escape(name)}</text>')
        for j, v in enumerate(values[i]):
            shade = 0.06 + 0.94 * (v / vmax) if v else 0.0
            out.append(
                f'<rect class="mark cell" x="{_num(left + j * cell_w)}" y="{y}" '
                f'width="{_num(cell_w - 2)}" height="{cell_h - 2}" '
                f'fill-opacity="{shade:.3f}"><title>{escape(name)} {escape(cols[j])}:00 '
                f"{compact(v)} {escape(what)}</title></rect>"
            )
    out.append("</svg>")
    return "".join(out)


def share_bars(labels: Sequence[str], series: Sequence[Series]) -> str:
    """One horizontal 100% bar per label, split by series (values are shares of 1)."""
    left, top, bar_h, gap = 96, 26, 16, 6
    height = top + (bar_h + gap) * len(labels) + 4
    span = WIDTH - left - 8
    out = [_open(height, "shares")]
    for i, label in enumerate(labels):
        y = top + i * (bar_h + gap)
        out.append(f'<text class="label" x="4" y="{y + bar_h - 4}">{escape(label)}</text>')
        x = float(left)
        total = sum(s.values[i] for s in series) or 1.0
        for s in series:
            share = s.values[i] / total
            if share <= 0:
                continue
            w = span * share
            out.append(
                f'<rect class="mark {s.css}" x="{_num(x)}" y="{y}" width="{_num(w)}" '
                f'height="{bar_h}"><title>{escape(label)}: {escape(s.name)} '
                f"{100 * share:.1f}%</title></rect>"
            )
            x += w
    out.append(legend(series, left, 14))
    out.append("</svg>")
    return "".join(out)


def _open(height: float, kind: str) -> str:
    return (
        f'<svg class="chart {kind}" viewBox="0 0 {WIDTH} {_num(height)}" '
        f'width="{WIDTH}" height="{_num(height)}" role="img">'
    )  # inline SVG in HTML needs no namespace (and the page holds no http(s) reference)
