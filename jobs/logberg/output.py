"""Rows printed for people and scripts: an ASCII table, CSV or JSON lines."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO


def plain(value: Any) -> Any:
    """A value as JSON and CSV take it: dates as ISO text, decimals as text, bytes as hex."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def write_rows(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str, out: TextIO
) -> None:
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(dict(zip(columns, (plain(v) for v in row), strict=True))) + "\n")
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow(["" if v is None else plain(v) for v in row])
    else:
        cells = [[("NULL" if v is None else str(plain(v))) for v in row] for row in rows]
        widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        out.write(line + "\n")
        out.write(
            "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |\n"
        )
        out.write(line + "\n")
        for r in cells:
            out.write(
                "| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |\n"
            )
        out.write(line + "\n")
        out.write(f"({len(cells)} row{'s' if len(cells) != 1 else ''})\n")
