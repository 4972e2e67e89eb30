"""DuckDB baseline for `logberg ingest`: the same parse, enrichment and validation, one process.

    python bench/duckdb_ingest.py --input DIR --output DIR [--threads N]

Reads every *.log / *.log.gz under DIR (recursively, skipping _manifests), parses each line
with ONE regular expression (`regexp_extract(line, pattern, [names...])`, struct form, so the
regex runs once per line), rejects lines by the same rules as logberg's line parser
(unparseable, bad_ip, bad_timestamp, bad_status, bad_size), enriches the good ones (UTC
timestamp from the line's offset, date, hour, status category, url_path, device class by
the rules of jobs/logberg/pipeline/devices.py: bot markers first, then tablet, mobile,
desktop, other; is_bot) and writes them, in ONE streaming COPY, as zstd Parquet
partitioned by date under OUTPUT/access_logs; rejects (with their raw line and reason) are
the date=NULL partition.
Prints one JSON line: {"kept": .., "rejected": .., "seconds": ..}.

The device markers are read from jobs/logberg/pipeline/devices.py with `ast` (no pyspark
import), so both tools classify with the same lists.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEVICES_PY = REPO / "jobs" / "logberg" / "pipeline" / "devices.py"

# The combined format, as in jobs/logberg/parse.py but without possessive quantifiers
# (RE2 has none; it never backtracks anyway).
LINE_RE = r'^(\S+) (\S+) (\S+) \[([^\]]*)\] "([^"]*)" (\S+) (\S+) "([^"]*)" "([^"]*)"(.*)$'
FIELDS = ["ip", "ident", "usr", "time", "request", "status", "size", "referer", "agent", "rest"]
IP_CHARS = r"^[0-9A-Fa-f:.]{2,45}$"
# url_path as LineScan.java takes it: `METHOD target[ HTTP...]`, the target up to its `?`.
PATH_RE = r"^[A-Z]{1,20} ([^ ?]*)[^ ]*(?: HTTP[^ ]*)?$"


def device_markers(path: Path = DEVICES_PY) -> dict[str, tuple[str, ...]]:
    """BOT/TABLET/PHONE/DESKTOP_MARKERS from devices.py, without importing it."""
    tree = ast.parse(path.read_text())
    out: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.endswith("_MARKERS"):
                out[target.id] = tuple(ast.literal_eval(node.value))
    missing = {"BOT_MARKERS", "TABLET_MARKERS", "PHONE_MARKERS", "DESKTOP_MARKERS"} - set(out)
    if missing:
        raise SystemExit(f"duckdb_ingest: {sorted(missing)} not found in {path}")
    return out


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _any(col: str, markers: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f"contains({col}, {_lit(m)})" for m in markers) + ")"


def device_sql(ua: str) -> str:
    """device_type for a lower-cased agent column, the rules of devices.device_type."""
    m = device_markers()
    android = f"contains({ua}, 'android')"
    return (
        f"CASE WHEN {ua} IS NULL THEN 'other' "
        f"WHEN {_any(ua, m['BOT_MARKERS'])} THEN 'bot' "
        f"WHEN {_any(ua, m['TABLET_MARKERS'])} OR ({android} AND NOT contains({ua}, 'mobile')) "
        "THEN 'tablet' "
        f"WHEN {_any(ua, m['PHONE_MARKERS'])} OR {android} THEN 'mobile' "
        f"WHEN {_any(ua, m['DESKTOP_MARKERS'])} THEN 'desktop' "
        "ELSE 'other' END"
    )


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
    )"""
    ua = "lower(" + nd("f.agent") + ")"
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
               {device_sql(ua)} AS device_type,
               {device_sql(ua)} = 'bot' AS is_bot,
               nullif(regexp_extract(f.request, {_lit(PATH_RE)}, 1), '') AS url_path,
               source_file, reject_reason,
               CASE WHEN reject_reason IS NOT NULL THEN line END AS raw_line
        FROM checked
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
