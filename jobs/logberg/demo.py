"""The end of `make demo`: print the newest day's top IPs and device shares."""

from __future__ import annotations

import sys

from logberg.query import write_rows
from logberg.session import build_session


def main() -> int:
    spark = build_session("logberg-demo")
    latest = spark.sql("SELECT MAX(date) FROM nginx_logs.daily_top_ips").collect()[0][0]
    if latest is None:
        print("no analytics yet: run `logberg run` first", file=sys.stderr)
        return 1
    for title, sql in (
        (
            f"Top IPs on {latest}",
            f"SELECT rank, ip_address, request_count, bytes_sent, unique_paths, "
            f"ROUND(error_rate, 3) AS error_rate, is_bot FROM nginx_logs.daily_top_ips "
            f"WHERE date = DATE'{latest}' ORDER BY rank",
        ),
        (
            f"Device shares on {latest}",
            f"SELECT rank, device_type, request_count, unique_ips, "
            f"ROUND(100 * share, 1) AS share_pct FROM nginx_logs.daily_top_devices "
            f"WHERE date = DATE'{latest}' ORDER BY rank",
        ),
        (
            "Weekly summary",
            "SELECT year, week_of_year, week_start_date, total_requests, unique_ips, "
            "ROUND(error_rate, 3) AS error_rate, ROUND(bot_share, 3) AS bot_share, busiest_day, "
            "busiest_hour FROM nginx_logs.weekly_analytics ORDER BY year, week_of_year",
        ),
    ):
        df = spark.sql(sql)
        print(f"\n{title}")
        write_rows(df.columns, [tuple(r) for r in df.collect()], "table", sys.stdout)
    print("\nExplore further: `.venv/bin/logberg sql` (try: USE nginx_logs; SHOW TABLES;)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
