"""`--log-format` into the lakehouse: a combined table gains the new columns and keeps its
rows, the generator's files of a preset match its manifest (rows, rejects, timing sums,
daily_latency and the report's latency section), and logs without timing leave
daily_latency empty. The formats line by line are tests/unit/parser/test_log_format.py."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from logberg.lakehouse import tables
from logberg.lakehouse.schema import ACCESS_LOGS, NO_DICTIONARY_PROP
from logberg.pipeline.ingest import batch
from logberg.pipeline.ingest.config import IngestConfig
from logberg.pipeline.logformat import ClientRule, Reading, compile_format
from tests.unit.parser.test_log_format import AGENT, INGRESS, INGRESS_RETRIED, T_UTC, T, write

ROW_UNIQUE = {"line_number", "timestamp", "request", "url_path", "query_string", "forwarded_for"}


def no_dictionary_columns(spark: SparkSession) -> set[str]:
    props = tables.table_properties(spark, ACCESS_LOGS)
    return {
        k.removeprefix(NO_DICTIONARY_PROP)
        for k, v in props.items()
        if k.startswith(NO_DICTIONARY_PROP) and v == "false"
    }


def combined_line(n: int) -> str:
    return f'1.2.3.{n} - - [{T}] "GET /p{n} HTTP/1.1" 200 {n} "-" "{AGENT}"'


@pytest.mark.integration
def test_a_combined_table_gains_the_new_columns_and_keeps_its_rows(
    spark, fresh_namespace, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    old.mkdir()
    write(old, [combined_line(n) for n in range(1, 4)])
    batch.ingest(spark, IngestConfig(inputs=(old.as_uri(),)))
    # combined logs leave the table as it always was: no format columns
    assert spark.table("nginx_logs.access_logs").columns == ACCESS_LOGS.names
    before = spark.table("nginx_logs.access_logs").orderBy("event_id").collect()
    # Parquet dictionaries are off for the unique-ish columns the table has (and source_file,
    # one value per data file), and named for no column it lacks; a property an older
    # logberg set for a missing one is removed.
    request_id = f"{NO_DICTIONARY_PROP}request_id"
    plain = {"event_id", "url", "referer", "source_file"}
    assert no_dictionary_columns(spark) == plain | ROW_UNIQUE
    spark.sql(f"ALTER TABLE nginx_logs.access_logs SET TBLPROPERTIES ('{request_id}'='false')")
    tables.upgrade(spark, ACCESS_LOGS)
    assert "request_id" not in no_dictionary_columns(spark)
    # ... and a table that is current is left alone: no new metadata version
    versions = "SELECT COUNT(*) FROM nginx_logs.access_logs.metadata_log_entries"
    n = spark.sql(versions).collect()[0][0]
    tables.upgrade(spark, ACCESS_LOGS)
    assert spark.sql(versions).collect()[0][0] == n

    new = tmp_path / "new"
    new.mkdir()
    write(new, [INGRESS, INGRESS_RETRIED, INGRESS.replace(" 0.001 [", " slow [")])
    rule = ClientRule()
    cfg = IngestConfig(
        inputs=(new.as_uri(),), reading=Reading(compile_format("ingress-nginx"), rule)
    )
    result = batch.ingest(spark, cfg).total
    assert (result.accepted, result.rejected) == (2, 1)

    table = spark.table("nginx_logs.access_logs")
    assert table.columns[: len(ACCESS_LOGS.names)] == ACCESS_LOGS.names  # added at the end
    gained = table.columns[len(ACCESS_LOGS.names) :]
    assert gained == [
        "request_time_ms", "upstream_response_time_ms", "upstream_attempts", "request_length",
        "upstream_addr", "upstream_status", "request_id",  # what upstreaminfo carries
        "proxy_upstream_name", "proxy_alternative_upstream_name", "upstream_response_length",
    ]  # fmt: skip
    assert "request_id" in no_dictionary_columns(spark)  # set with the column
    old_rows = table.where("source_file LIKE '%/old/%'").orderBy("event_id")
    assert old_rows.select(*before[0].__fields__).collect() == before  # unchanged
    assert (
        old_rows.where("request_time_ms IS NOT NULL OR proxy_upstream_name IS NOT NULL").count()
        == 0
    )
    got = {
        (r.request_time_ms, r.upstream_response_time_ms, r.upstream_attempts, r.proxy_upstream_name)
        for r in table.where("source_file LIKE '%/new/%'").collect()
    }
    assert got == {(1, 0, 1, "upstream-default-backend"), (1503, 1502, 2, "default-shop-80")}
    (rej,) = spark.sql(
        "SELECT reason, log_format FROM nginx_logs.access_logs_rejects "
        "WHERE source_file LIKE '%/new/%'"
    ).collect()
    assert (rej.reason, rej.log_format) == ("bad_request_time", "ingress-nginx")
    (run,) = spark.sql(
        "SELECT log_format, client_ip FROM nginx_logs.ingest_runs ORDER BY started_at DESC LIMIT 1"
    ).collect()
    assert (run.log_format, run.client_ip) == ("ingress-nginx", "remote_addr")

    # a re-run of both changes nothing; a combined re-read keeps the extra column NULL
    assert batch.ingest(spark, IngestConfig(inputs=(old.as_uri(),), full=True)).total.accepted == 3
    assert spark.table("nginx_logs.access_logs").count() == 5


@pytest.mark.integration
@pytest.mark.parametrize("preset", ["ingress-nginx", "json"])
def test_generated_logs_of_a_preset_match_the_manifest(
    spark, fresh_namespace, tmp_path: Path, preset: str
) -> None:
    """The generator's files of a preset, ingested with it: rows per day, rejects by kind
    and the timing sums equal the manifest's ground truth; then daily_latency and the
    report's latency section against plain Python over the table's rows."""
    from tests.integration.test_ingest import counts, expected, generate

    manifest = generate(tmp_path, 31, "--format", preset, "--malformed-rate", "0.01")
    cfg = IngestConfig(inputs=(tmp_path.as_uri(),), reading=Reading(compile_format(preset)))
    batch.ingest(spark, cfg)
    assert counts(spark, manifest) == expected(manifest)
    timing = manifest["totals"]["timing"]
    assert timing["retried"] > 0 and timing["no_upstream"] > 0  # both kinds are covered
    got = spark.sql(
        "SELECT SUM(request_time_ms) AS request_time_ms, "
        "SUM(upstream_response_time_ms) AS upstream_response_time_ms, "
        "SUM(upstream_attempts) AS upstream_attempts, "
        "COUNT_IF(upstream_attempts > 1) AS retried, "
        "COUNT_IF(upstream_attempts IS NULL) AS no_upstream "
        "FROM nginx_logs.access_logs"
    ).collect()[0]
    assert got.asDict() == timing
    # every line has its id; an upstream name exactly where nginx proxied (ingress-nginx),
    # and a host on every line (json, whose format has $host)
    named = "proxy_upstream_name IS NULL" if preset == "ingress-nginx" else "upstream_addr IS NULL"
    hostless = "host IS NULL" if preset == "json" else "FALSE"
    (n,) = spark.sql(
        "SELECT COUNT(*) FROM nginx_logs.access_logs WHERE request_id IS NULL "
        f"OR ({named}) <> (upstream_addr IS NULL) OR {hostless}"
    ).collect()[0]
    assert n == 0
    rejects = spark.sql(
        "SELECT reason, log_format, COUNT(*) AS n FROM nginx_logs.access_logs_rejects GROUP BY 1, 2"
    ).collect()
    kinds = manifest["totals"]["malformed"]
    assert {(r.reason, r.log_format): r.n for r in rejects} == {
        ("unparseable", preset): kinds["truncated"] + kinds["garbage"],
        ("bad_timestamp", preset): kinds["bad_timestamp"],
    }

    # daily_latency: per day over all requests, against plain Python over the table's rows
    from logberg.pipeline.analytics import AnalyticsConfig, analytics

    analytics(spark, AnalyticsConfig())
    times: dict[dt.date, list[int]] = {}
    for r in spark.sql("SELECT date, request_time_ms AS t FROM nginx_logs.access_logs").collect():
        times.setdefault(r.date, []).append(r.t)
    want = {}
    for day, ts in times.items():
        ts.sort()
        at = [ts[math.ceil(q * len(ts) - 1e-9) - 1] for q in (0.5, 0.95, 0.99)]
        want[day] = (len(ts), *at, ts[-1])
    got_latency = {
        r.date: (r.requests, r.p50_ms, r.p95_ms, r.p99_ms, r.max_ms)
        for r in spark.sql(
            "SELECT * FROM nginx_logs.daily_latency WHERE status_category = 'All'"
        ).collect()
    }
    assert got_latency == want
    assert {str(d): n for d, (n, *_) in want.items()} == {
        d: v["valid"] for d, v in manifest["days"].items() if v["valid"]
    }
    slow = spark.sql(
        "SELECT date, COUNT(*) AS n, MIN(requests) AS hits FROM nginx_logs.daily_latency "
        "WHERE scope = 'path' GROUP BY date"
    ).collect()
    assert slow and all(r.n <= 10 and r.hits >= 20 for r in slow)
    # the report's latency section is those rows
    from logberg.pipeline.report.data import ReportConfig, gather

    data = gather(spark, ReportConfig())
    assert data.latency == [
        {"date": d.isoformat(), "requests": n, "p50": p50, "p95": p95, "p99": p99}
        for d, (n, p50, p95, p99, _) in sorted(want.items())
    ]


@pytest.mark.integration
def test_without_timing_daily_latency_is_empty_not_failing(
    spark, fresh_namespace, tmp_path: Path
) -> None:
    from logberg.pipeline.analytics import AnalyticsConfig, analytics

    write(tmp_path, [combined_line(n) for n in range(1, 4)])
    batch.ingest(spark, IngestConfig(inputs=(tmp_path.as_uri(),)))
    result = analytics(spark, AnalyticsConfig())
    assert result.days == [T_UTC.date()]
    assert spark.table("nginx_logs.daily_latency").count() == 0
    assert spark.table("nginx_logs.daily_top_ips").count() == 3
