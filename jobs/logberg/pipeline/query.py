"""`logberg query`: one SQL statement's rows (for scripts and tests), with time travel."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pyspark.sql import SparkSession

from logberg.errors import ConfigError, QueryError
from logberg.lakehouse import sql
from logberg.lakehouse.connect import first_line, is_query_error

TABLE_REF = re.compile(r"\b(nginx_logs\.[A-Za-z_][A-Za-z0-9_]*)\b(?!\.)")


def with_as_of(statement: str, as_of: str) -> str:
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
        clause = f"TIMESTAMP AS OF {sql.literal(as_of)}"
    return TABLE_REF.sub(lambda m: f"{m.group(1)} {clause}", statement)


def query(
    spark: SparkSession, statement: str, as_of: str | None = None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(column names, rows) of one statement, time-travelled when `as_of` is given; a
    statement Spark rejects is a QueryError with Spark's message."""
    try:
        df = spark.sql(with_as_of(statement, as_of) if as_of else statement)
        rows = df.collect()  # on Spark Connect one round trip: the rows carry their names
        columns = list(rows[0].__fields__) if rows else df.columns
    except Exception as e:
        if not is_query_error(e):
            raise
        raise QueryError(first_line(str(e))) from None
    return columns, [tuple(r) for r in rows]
