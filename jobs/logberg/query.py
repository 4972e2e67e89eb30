"""`logberg query`: one SQL statement, rows on stdout, no log noise (for scripts and tests)."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from logberg.errors import ConfigError

TABLE_REF = re.compile(r"\b(nginx_logs\.[A-Za-z_][A-Za-z0-9_]*)\b(?!\.)")


def with_as_of(sql: str, as_of: str) -> str:
    """Pin every nginx_logs table in the statement to a snapshot id or a timestamp."""
    if as_of.isdigit():
        clause = f"VERSION AS OF {int(as_of)}"
    else:
        try:
            dt.datetime.fromisoformat(as_of)
        except ValueError:
            raise ConfigError(
                f"--as-of {as_of!r}: expected a snapshot id or an ISO timestamp"
            ) from None
        clause = f"TIMESTAMP AS OF '{as_of}'"
    return TABLE_REF.sub(lambda m: f"{m.group(1)} {clause}", sql)


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def write_rows(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str, out: TextIO
) -> None:
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(dict(zip(columns, (_plain(v) for v in row), strict=True))) + "\n")
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow(["" if v is None else _plain(v) for v in row])
    else:
        cells = [[("NULL" if v is None else str(_plain(v))) for v in row] for row in rows]
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


def run(sql: str, fmt: str = "table", as_of: str | None = None, out: TextIO | None = None) -> int:
    from logberg.session import build_session

    statement = with_as_of(sql, as_of) if as_of else sql
    spark = build_session("logberg-query")
    df = spark.sql(statement)
    rows = [tuple(r) for r in df.collect()]
    write_rows(df.columns, rows, fmt, out or sys.stdout)
    return 0
