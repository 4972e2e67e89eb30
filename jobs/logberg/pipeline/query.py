"""`logberg query`: one SQL statement's rows (for scripts and tests), with time travel."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pyspark.sql import SparkSession

from logberg.errors import ConfigError
from logberg.lakehouse import sql

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
    """(column names, rows) of one statement, time-travelled when `as_of` is given."""
    df = spark.sql(with_as_of(statement, as_of) if as_of else statement)
    rows = df.collect()  # on Spark Connect one round trip: the rows carry their names
    columns = list(rows[0].__fields__) if rows else df.columns
    return columns, [tuple(r) for r in rows]
