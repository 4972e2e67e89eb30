"""DuckDB baseline for `logberg analytics`: the five gold tables in one process, plain SQL.

    python bench/duckdb_analytics.py --files LIST --output DIR [--top-n N] [--threads N]
    python bench/duckdb_analytics.py --input DIR --output DIR      # duckdb_ingest.py's output

LIST is a text file with one Parquet path per line: the data files of logberg's
`access_logs` (the bench takes them from the table's `files` metadata), so both tools read
the same bytes. With --input, the date-partitioned Parquet that duckdb_ingest.py wrote is
read instead (its rejects, the date=NULL partition, are left out).

The tables are the ones jobs/logberg/pipeline/analytics/ builds, with the same columns,
ranks (1..N by count desc, then key asc) and ISO weeks: daily_top_ips, weekly_top_ips,
daily_top_devices, weekly_top_devices, weekly_analytics (without processed_timestamp). Each
is written to DIR/<table>.parquet. Prints one JSON line: {"seconds": .., "rows": {..}}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

TABLES = (
    "daily_top_ips",
    "weekly_top_ips",
    "daily_top_devices",
    "weekly_top_devices",
    "weekly_analytics",
)
WEEK = "week_year, week_of_year, week_start_date, week_end_date"


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def source_sql(files: list[str] | None, input_dir: Path | None) -> str:
    """The access_logs rows the tables are built from, with the ISO week columns."""
    cols = (
        "date, hour, ip_address, url_path, response_size, status_code, status_category, "
        "device_type, is_bot"
    )
    if files is not None:
        read = f"SELECT {cols} FROM read_parquet([{', '.join(_lit(f) for f in files)}])"
    else:
        assert input_dir is not None
        glob = _lit(str(input_dir / "access_logs" / "**" / "*.parquet"))
        read = (
            f"SELECT {cols} FROM read_parquet({glob}, hive_partitioning=true) "
            "WHERE reject_reason IS NULL"
        )
    monday = "CAST(date - (isodow(date) - 1) * INTERVAL 1 DAY AS DATE)"
    return f"""
    CREATE TEMP TABLE logs AS
    SELECT *, year(CAST(week_start_date + INTERVAL 3 DAY AS DATE)) AS week_year,
           weekofyear(date) AS week_of_year,
           CAST(week_start_date + INTERVAL 6 DAY AS DATE) AS week_end_date
    FROM (SELECT *, {monday} AS week_start_date FROM ({read}))
    """


def ip_sql(group: str, n: int, where: str = "") -> str:
    return f"""
    SELECT {group}, rank, ip_address, request_count, bytes_sent, unique_paths, error_rate, is_bot
    FROM (
        SELECT {group}, ip_address, count(*) AS request_count,
               sum(response_size) AS bytes_sent, count(DISTINCT url_path) AS unique_paths,
               count(*) FILTER (WHERE status_code >= 400) / count(*) AS error_rate,
               avg(CAST(is_bot AS DOUBLE)) >= 0.5 AS is_bot,
               CAST(row_number() OVER (PARTITION BY {group}
                    ORDER BY count(*) DESC, ip_address ASC) AS INTEGER) AS rank
        FROM logs {where} GROUP BY {group}, ip_address
    ) WHERE rank <= {n}
    """


def device_sql(group: str, n: int) -> str:
    return f"""
    SELECT {group}, rank, device_type, request_count, unique_ips, share
    FROM (
        SELECT {group}, device_type, count(*) AS request_count,
               count(DISTINCT ip_address) AS unique_ips,
               count(*) / sum(count(*)) OVER (PARTITION BY {group}) AS share,
               CAST(row_number() OVER (PARTITION BY {group}
                    ORDER BY count(*) DESC, device_type ASC) AS INTEGER) AS rank
        FROM logs GROUP BY {group}, device_type
    ) WHERE rank <= {n}
    """


WEEKLY_SQL = f"""
WITH totals AS (
    SELECT {WEEK}, count(*) AS total_requests, count(DISTINCT ip_address) AS unique_ips,
           sum(response_size) AS total_bytes,
           count(*) FILTER (WHERE status_category = 'Informational') AS informational_count,
           count(*) FILTER (WHERE status_category = 'Success') AS success_count,
           count(*) FILTER (WHERE status_category = 'Redirect') AS redirect_count,
           count(*) FILTER (WHERE status_category = 'Client Error') AS client_error_count,
           count(*) FILTER (WHERE status_category = 'Server Error') AS server_error_count,
           avg(CAST(is_bot AS DOUBLE)) AS bot_share
    FROM logs GROUP BY {WEEK}
), days AS (
    SELECT week_start_date, date AS busiest_day, count(*) AS busiest_day_requests,
           row_number() OVER (PARTITION BY week_start_date ORDER BY count(*) DESC, date) AS r
    FROM logs GROUP BY week_start_date, date
), hours AS (
    SELECT week_start_date, hour AS busiest_hour, count(*) AS busiest_hour_requests,
           row_number() OVER (PARTITION BY week_start_date ORDER BY count(*) DESC, hour) AS r
    FROM logs GROUP BY week_start_date, hour
)
SELECT t.week_year AS year, t.week_of_year, t.week_year, t.week_start_date, t.week_end_date,
       total_requests, unique_ips, total_bytes, informational_count, success_count,
       redirect_count, client_error_count, server_error_count,
       (client_error_count + server_error_count) / total_requests AS error_rate, bot_share,
       busiest_day, busiest_day_requests, busiest_hour, busiest_hour_requests
FROM totals t
JOIN days d ON d.week_start_date = t.week_start_date AND d.r = 1
JOIN hours h ON h.week_start_date = t.week_start_date AND h.r = 1
"""


def queries(n: int) -> dict[str, str]:
    return {
        "daily_top_ips": ip_sql("date", n),
        "weekly_top_ips": ip_sql(WEEK, n),
        "daily_top_devices": device_sql("date", n),
        "weekly_top_devices": device_sql(WEEK, n),
        "weekly_analytics": WEEKLY_SQL,
    }


def run(
    files: list[str] | None,
    input_dir: Path | None,
    out: Path,
    n: int = 10,
    threads: int | None = None,
) -> dict[str, object]:
    import duckdb

    t0 = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute(source_sql(files, input_dir))
    rows: dict[str, int] = {}
    for name, q in queries(n).items():
        path = out / f"{name}.parquet"
        con.execute(f"COPY ({q}) TO {_lit(str(path))} (FORMAT parquet)")
        (count,) = con.execute(f"SELECT count(*) FROM {_lit(str(path))}").fetchall()[0]
        rows[name] = int(count)
    con.close()
    return {"rows": rows, "seconds": round(time.perf_counter() - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="duckdb_analytics", description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--files", type=Path, help="text file: one access_logs Parquet path a line")
    src.add_argument("--input", type=Path, help="duckdb_ingest.py's output directory")
    p.add_argument("--output", required=True, type=Path, help="output directory (replaced)")
    p.add_argument("--top-n", type=int, default=10, help="ranks kept per day/week (default 10)")
    p.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    a = p.parse_args(argv)
    files = [f for f in a.files.read_text().splitlines() if f] if a.files else None
    if files is not None and not files:
        raise SystemExit(f"duckdb_analytics: {a.files} lists no file")
    print(json.dumps(run(files, a.input, a.output, a.top_n, a.threads)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
