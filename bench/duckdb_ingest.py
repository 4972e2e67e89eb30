"""DuckDB baseline for `logberg ingest`: the same parse, enrichment and validation, one process.

    python bench/duckdb_ingest.py --input DIR --output DIR [--threads N]

Reads every *.log / *.log.gz under DIR (recursively, skipping _manifests), parses each line
with ONE regular expression (`regexp_extract(line, pattern, [names...])`, struct form, so the
regex runs once per line), rejects lines by the same rules as logberg's line parser
(unparseable, bad_ip, bad_timestamp, bad_status, bad_size), enriches the good ones (UTC
timestamp from the line's offset, date, hour, status category, url_path, device class,
is_bot) and writes them, in ONE streaming COPY, as zstd Parquet partitioned by date under
OUTPUT/access_logs; rejects (with their raw line and reason) are the date=NULL partition.
Prints one JSON line: {"kept": .., "rejected": .., "seconds": ..}.

Device classes come the way logberg's ingest gets them: ua-parser's families (here the
Python ua-parser package) under logberg's rules (logberg.pipeline.agent_rules, which reads
the same agents.rules file as the JVM), for each distinct agent once. As in logberg, the
agents at the head of each file are classified up front into a table the COPY joins; an
agent missing from it is classified in place by a Python function (COALESCE calls it only
for those rows).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

HEAD_LINES = 2000  # per file, for the agent table

# The combined format, as in jobs/logberg/parse.py but without possessive quantifiers
# (RE2 has none; it never backtracks anyway).
LINE_RE = r'^(\S+) (\S+) (\S+) \[([^\]]*)\] "([^"]*)" (\S+) (\S+) "([^"]*)" "([^"]*)"(.*)$'
FIELDS = ["ip", "ident", "usr", "time", "request", "status", "size", "referer", "agent", "rest"]
IP_CHARS = r"^[0-9A-Fa-f:.]{2,45}$"
# url_path as LineScan.java takes it: `METHOD target[ HTTP...]`, the target up to its `?`.
PATH_RE = r"^[A-Z]{1,20} ([^ ?]*)[^ ]*(?: HTTP[^ ]*)?$"


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def classifier() -> Callable[[str], str]:
    """Agent -> device class, by ua-parser and logberg's rules, each agent computed once."""
    from ua_parser import parse

    from logberg.pipeline.agent_rules import OTHER, device_type

    @cache
    def classify(agent: str) -> str:
        r = parse(agent)
        return device_type(
            agent,
            r.user_agent.family if r.user_agent else OTHER,
            r.os.family if r.os else OTHER,
            r.device.family if r.device else OTHER,
        )

    return classify


def head_agents(files: list[str], lines: int = HEAD_LINES) -> set[str]:
    """The agents of the first `lines` lines of each file (as logberg's ingest samples)."""
    agent = re.compile(LINE_RE)
    found: set[str] = set()
    for f in files:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(lines), fh, strict=False):
                m = agent.match(line.rstrip("\n"))
                if m and m.group(9) != "-":
                    found.add(m.group(9))
    return found


def input_files(root: Path) -> list[str]:
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and "_manifests" not in p.parts and p.name.endswith((".log", ".log.gz"))
    ]
    return sorted(str(p) for p in files)


def build_sql(files: list[str], out: Path) -> str:
    file_list = "[" + ", ".join(_lit(f) for f in files) + "]"
    names = "[" + ", ".join(_lit(f) for f in FIELDS) + "]"
    # One column per line: a delimiter and quote that never occur, no header, no sniffing.
    # compression='auto' picks gzip for .gz names.
    read = (
        f"read_csv({file_list}, columns={{'line': 'VARCHAR'}}, delim='\\0', quote='', "
        "escape='', header=false, auto_detect=false, compression='auto', "
        "filename=true, strict_mode=false)"
    )

    def nd(c: str) -> str:  # '-' -> NULL, like parse._dash_null
        return f"CASE WHEN {c} = '-' THEN NULL ELSE {c} END"

    # One streaming COPY: the parse runs once per line and nothing is materialised. Rejects
    # go to the same Parquet dataset as a date=NULL partition, with their raw line.
    parsed = f"""
    WITH raw AS (
        SELECT line, filename AS source_file, regexp_extract(line, {_lit(LINE_RE)}, {names}) AS f
        FROM {read}
        WHERE line IS NOT NULL AND length(line) > 0
    ), typed AS (
        SELECT line, source_file, f,
               f.ip <> '' AS matched,
               try_strptime(f.time, '%d/%b/%Y:%H:%M:%S %z') AS ts,
               CASE WHEN regexp_full_match(f.status, '[1-5][0-9][0-9]')
                    THEN TRY_CAST(f.status AS INTEGER) END AS status_code,
               CASE WHEN f.size = '-' THEN 0::BIGINT
                    WHEN regexp_full_match(f.size, '[0-9]{{1,18}}')
                    THEN TRY_CAST(f.size AS BIGINT) END AS response_size
        FROM raw
    ), checked AS (
        SELECT *,
               CASE WHEN NOT matched THEN 'unparseable'
                    WHEN NOT regexp_matches(f.ip, {_lit(IP_CHARS)}) THEN 'bad_ip'
                    WHEN ts IS NULL THEN 'bad_timestamp'
                    WHEN status_code IS NULL THEN 'bad_status'
                    WHEN response_size IS NULL THEN 'bad_size'
               END AS reject_reason
        FROM typed
    ), classed AS (
        SELECT checked.*,
               coalesce(a.device_type, logberg_device({nd("f.agent")}), 'other') AS device_type
        FROM checked LEFT JOIN agents a ON a.agent = {nd("f.agent")}
    )"""
    good = f"""
    COPY (
        {parsed}
        SELECT f.ip AS ip_address, {nd("f.usr")} AS remote_user,
               CAST(ts AS TIMESTAMP) AS timestamp,
               CASE WHEN reject_reason IS NULL THEN CAST(CAST(ts AS TIMESTAMP) AS DATE) END
                   AS date,
               hour(CAST(ts AS TIMESTAMP)) AS hour,
               f.request AS request, status_code,
               CASE WHEN status_code < 200 THEN 'Informational'
                    WHEN status_code < 300 THEN 'Success'
                    WHEN status_code < 400 THEN 'Redirect'
                    WHEN status_code < 500 THEN 'Client Error'
                    ELSE 'Server Error' END AS status_category,
               response_size, {nd("f.referer")} AS referer, {nd("f.agent")} AS user_agent,
               device_type, device_type = 'bot' AS is_bot,
               nullif(regexp_extract(f.request, {_lit(PATH_RE)}, 1), '') AS url_path,
               source_file, reject_reason,
               CASE WHEN reject_reason IS NOT NULL THEN line END AS raw_line
        FROM classed
    ) TO {_lit(str(out / "access_logs"))}
      (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (date), OVERWRITE_OR_IGNORE)
    """
    return good


def run(input_dir: Path, out: Path, threads: int | None = None) -> dict[str, object]:
    import duckdb

    t0 = time.perf_counter()
    files = input_files(input_dir)
    if not files:
        raise SystemExit(f"duckdb_ingest: no .log/.log.gz files under {input_dir}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # TIMESTAMPTZ -> TIMESTAMP in UTC
    con.execute("SET preserve_insertion_order = false")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    classify = classifier()
    con.create_function(
        "logberg_device", classify, [duckdb.sqltypes.VARCHAR], duckdb.sqltypes.VARCHAR
    )
    con.execute("CREATE TABLE agents (agent VARCHAR, device_type VARCHAR)")
    con.executemany(
        "INSERT INTO agents VALUES (?, ?)", [(a, classify(a)) for a in head_agents(files)]
    )
    con.execute(build_sql(files, out))
    t_write = time.perf_counter()
    by_reason = dict(
        con.execute(
            "SELECT coalesce(reject_reason, ''), count(*) FROM read_parquet("
            f"{_lit(str(out / 'access_logs' / '**' / '*.parquet'))}, hive_partitioning=true) "
            "GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    kept = by_reason.pop("", 0)
    con.close()
    return {
        "files": len(files),
        "kept": int(kept),
        "rejected": int(sum(by_reason.values())),
        "rejected_by_reason": by_reason,
        "parse_write_s": round(t_write - t0, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="duckdb_ingest", description=__doc__.split("\n")[0])
    p.add_argument("--input", required=True, type=Path, help="directory with .log/.log.gz files")
    p.add_argument("--output", required=True, type=Path, help="output directory (replaced)")
    p.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    a = p.parse_args(argv)
    print(json.dumps(run(a.input, a.output, a.threads)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
