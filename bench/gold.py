"""The gold tables of logberg beside the DuckDB baseline's: the input files both read, and
a row-for-row comparison (the bench reports no analytics ratio unless they agree)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bench.duckdb_analytics import TABLES

Row = tuple[Any, ...]


def access_logs_files(spark: Any) -> list[str]:
    """Local paths of the data files in access_logs' current snapshot."""
    from logberg.lakehouse.schema import ACCESS_LOGS
    from logberg.lakehouse.tables import qualified

    rows = spark.sql(f"SELECT file_path FROM {qualified(spark, ACCESS_LOGS)}.files").collect()
    paths = []
    for (uri,) in rows:
        parsed = urlparse(uri)
        if parsed.scheme not in ("", "file"):
            raise ValueError(f"access_logs file {uri}: the DuckDB baseline reads local files only")
        paths.append(parsed.path)
    return sorted(paths)


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.12g}")  # the same double, summed in another order
    if isinstance(value, dt.datetime):
        return value.date() if value == dt.datetime.combine(value.date(), dt.time()) else value
    return value


def _rows(rows: list[Any]) -> list[Row]:
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


def mismatches(spark: Any, duck_dir: Path, limit: int = 3) -> dict[str, str]:
    """Per table, how logberg's rows differ from the baseline's in `duck_dir` (empty: none)."""
    import duckdb

    from logberg.lakehouse import schema
    from logberg.lakehouse.tables import qualified

    out: dict[str, str] = {}
    for name in TABLES:
        table = next(t for t in vars(schema).values() if getattr(t, "name", None) == name)
        cols = [c for c in table.names if c != "processed_timestamp"]
        ours = _rows(
            spark.sql(f"SELECT {', '.join(cols)} FROM {qualified(spark, table)}").collect()
        )
        path = str(duck_dir / f"{name}.parquet").replace("'", "''")
        con = duckdb.connect()
        theirs = _rows(
            con.execute(f"SELECT {', '.join(cols)} FROM read_parquet('{path}')").fetchall()
        )
        con.close()
        if ours != theirs:
            only_ours = [r for r in ours if r not in set(theirs)][:limit]
            only_theirs = [r for r in theirs if r not in set(ours)][:limit]
            out[name] = (
                f"{len(ours)} rows vs {len(theirs)}; only logberg: {only_ours}; "
                f"only DuckDB: {only_theirs}"
            )
    return out
