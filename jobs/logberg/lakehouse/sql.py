"""Spark SQL literals and identifiers: the one place that quotes values into SQL text.

Spark's parser unescapes backslash sequences inside string literals (`\\n`, `\\u0041`, ...),
so a value is quoted by escaping every backslash and quote; nothing else needs escaping,
and any other character (newlines, unicode) goes through as it is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping


def literal(value: str) -> str:
    """A Spark SQL string literal that reads back exactly as `value`."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literals(values: Iterable[str]) -> str:
    """Comma-separated literals, e.g. for `IN (...)`."""
    return ", ".join(literal(v) for v in values)


def identifier(name: str) -> str:
    """A back-quoted identifier (one name part)."""
    return "`" + name.replace("`", "``") + "`"


def date_literal(value: dt.date) -> str:
    return f"DATE '{value.isoformat()}'"


def dates_in(column: str, values: Iterable[dt.date]) -> str:
    """`column IN (DATE '…', …)`, sorted (so plans and logs are stable)."""
    return f"{column} IN ({', '.join(date_literal(v) for v in sorted(set(values)))})"


def timestamp_literal(ts: dt.datetime) -> str:
    """A literal in the session time zone (UTC); an aware value is converted first."""
    if ts.tzinfo:
        ts = ts.astimezone(dt.timezone.utc)
    return f"TIMESTAMP '{ts.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def map_literal(options: Mapping[str, str]) -> str:
    """`map('k', 'v', …)`, the form Iceberg procedures take options in."""
    return "map(" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in options.items()) + ")"
