"""`--log-format` and `--client-ip`: nginx formats compiled once, lines scanned by them on the
JVM (dev.logberg.LogFormat), the client taken from X-Forwarded-For behind trusted proxies.

Each case writes lines by hand, reads them with ingest's reader and checks every typed
value; the last ones ingest into the lakehouse and check the schema evolution of
access_logs and the run and rejects tables.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from logberg.errors import ConfigError
from logberg.lakehouse import tables
from logberg.lakehouse.schema import ACCESS_LOGS, NO_DICTIONARY_PROP
from logberg.pipeline.ingest import batch
from logberg.pipeline.ingest.config import IngestConfig
from logberg.pipeline.ingest.reader import read_parsed
from logberg.pipeline.logformat import PRESETS, ClientRule, Reading, compile_format

T = "10/Oct/2026:13:55:36 -0700"
T_UTC = dt.datetime(2026, 10, 10, 20, 55, 36)
AGENT = "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"

# ingress-nginx's upstreaminfo, as its docs define it (user-guide/nginx-configuration/
# log-format); the lines are what the controller writes for it: a plain request, and one
# retried on a second endpoint, whose upstream fields are lists.
INGRESS = (
    '192.168.65.4 - - [25/Aug/2026:16:19:14 +0000] "GET /runtime.134ad77.js HTTP/2.0" 404 548 '
    '"https://dashboard.example/" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 '
    '(KHTML, like Gecko) Chrome/116.0.0.0 Safari/537.36" 102 0.001 [upstream-default-backend] '
    "[] 127.0.0.1:8181 548 0.000 404 1fcd22e5f47201ab738f7b4b8b894551"
)
INGRESS_RETRIED = (
    '10.244.0.1 - alice [07/Oct/2026:15:15:32 +0000] "POST /api/orders HTTP/1.1" 200 17 "-" '
    '"curl/8.9.0" 377 1.503 [default-shop-80] [] 10.244.0.127:5678, 10.244.0.128:5678 0, 17 '
    "1.500, 0.002 502, 200 99a7002013af04c7365ca88b3b828f9b"
)


def write(tmp_path: Path, lines: list[str], name: str = "access.log") -> str:
    path = tmp_path / name
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return f"file:{path}"


def read(spark: SparkSession, uri: str, fmt: str, client: ClientRule | None = None) -> list[Row]:
    reading = Reading(compile_format(fmt), client or ClientRule())
    return read_parsed(spark, [uri], None, reading).orderBy("line_number").collect()


# ---- compiling ------------------------------------------------------------------------------


def test_every_preset_compiles_and_combined_written_out_takes_the_fast_path() -> None:
    for name in PRESETS:
        assert compile_format(name).name == name
    pasted = compile_format(
        "log_format combined '$remote_addr - $remote_user [$time_local] '\n"
        "    '\"$request\" $status $body_bytes_sent '\n"
        '    \'"$http_referer" "$http_user_agent"\';'
    )
    assert (pasted.name, pasted.fast_path) == ("combined", True)
    assert compile_format("ingress-nginx").extras == (
        "proxy_upstream_name",
        "proxy_alternative_upstream_name",
        "upstream_response_length",
    )
    assert compile_format("json").escape == "json"


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ('$remote_addr$remote_user [$time_local] "$request" $status', "$remote_addr and "),
        ('$remote_addr [$time_local] "$request" $status $http_user_agent -', "must be quoted"),
        ('$remote_addr [$time_local] "$request"', "no $status"),
        ('$remote_addr "$request" $status', "no $time_local, $time_iso8601 or $msec"),
        ("log_format x escape=none '$remote_addr [$time_local] \"$request\" $status';", "none"),
        ('$remote_addr [$time_local] "$request" $status $date', "'date'"),
        ('$remote_addr $remote_addr [$time_local] "$request" $status', "both fill"),
        ("apache", "not a preset"),
        ('log_format x \'$remote_addr [$time_local] "$request" $status;', "unterminated"),
    ],
)
def test_a_format_that_cannot_be_scanned_is_refused_by_name(fmt: str, message: str) -> None:
    with pytest.raises(ConfigError, match="--log-format") as e:
        compile_format(fmt)
    assert message in str(e.value)


def test_the_client_rule_fails_fast_on_wrong_settings() -> None:
    with pytest.raises(ConfigError, match="--trusted-proxies"):
        ClientRule.parse("x-forwarded-for", None)
    with pytest.raises(ConfigError, match=r"--trusted-proxies '10\.0\.0\.0/33'"):
        ClientRule.parse("x-forwarded-for", "10.0.0.0/8,10.0.0.0/33")
    with pytest.raises(ConfigError, match="--client-ip x-forwarded-for"):
        ClientRule.parse("remote_addr", "10.0.0.0/8")
    rule = ClientRule.parse("x-forwarded-for", " 10.1.2.3/8, 2001:db8::/32")
    assert rule.describe() == "x-forwarded-for; trusted 10.0.0.0/8,2001:db8::/32"


# ---- scanning -------------------------------------------------------------------------------


def test_ingress_nginx_lines_are_parsed_field_by_field(spark, tmp_path: Path) -> None:
    plain, retried = read(spark, write(tmp_path, [INGRESS, INGRESS_RETRIED]), "ingress-nginx")
    assert plain.reject_reason is None and retried.reject_reason is None
    assert (plain.ip_address, plain.timestamp, plain.status_code, plain.response_size) == (
        "192.168.65.4",
        dt.datetime(2026, 8, 25, 16, 19, 14),
        404,
        548,
    )
    assert (plain.url_path, plain.protocol, plain.referer) == (
        "/runtime.134ad77.js",
        "HTTP/2.0",
        "https://dashboard.example/",
    )
    assert plain.user_agent.endswith("Chrome/116.0.0.0 Safari/537.36")
    assert (plain.request_length, plain.request_time_ms) == (102, 1)
    assert (plain.proxy_upstream_name, plain.proxy_alternative_upstream_name) == (
        "upstream-default-backend",
        None,
    )
    assert (plain.upstream_addr, plain.upstream_response_length) == ("127.0.0.1:8181", "548")
    assert (plain.upstream_response_time_ms, plain.upstream_attempts) == (0, 1)
    assert (plain.upstream_status, plain.request_id) == ("404", "1fcd22e5f47201ab738f7b4b8b894551")
    # the retry: every upstream field is a list; the time is the sum over both attempts
    assert retried.remote_user == "alice"
    assert (retried.request_length, retried.request_time_ms) == (377, 1503)
    assert retried.upstream_addr == "10.244.0.127:5678, 10.244.0.128:5678"
    assert retried.upstream_response_length == "0, 17"
    assert (retried.upstream_response_time_ms, retried.upstream_attempts) == (1502, 2)
    assert retried.upstream_status == "502, 200"
    assert retried.request_id == "99a7002013af04c7365ca88b3b828f9b"


def test_odd_literals_and_other_time_variables(spark, tmp_path: Path) -> None:
    fmt = (
        "log_format odd '<<$host>> $remote_addr|$msec|$status|\"$request\"|rt=$request_time'\n"
        "               ' ua=\"$http_user_agent\" $geoip_country_code';"
    )
    lines = [
        f'<<shop.example>> 1.2.3.4|1791665736.250|200|"GET /a?b=1 HTTP/1.1"|rt=0.5 ua="{AGENT}" DE',
        '<<->> 1.2.3.4|1791665736.250|200|"GET / HTTP/1.1"|rt=- ua="-" -',
        '<<h>> 1.2.3.4|1791665736.250|200|"GET / HTTP/1.1"|rt=fast ua="x" DE',
        '<<h>> 1.2.3.4|17916615|200|"GET / HTTP/1.1"|rt=1 ua="x" DE',
        '<<h>> 1.2.3.4 1791665736.250|200|"GET / HTTP/1.1"|rt=1 ua="x" DE',
    ]
    good, dashes, bad_time, bad_ts, broken = read(spark, write(tmp_path, lines), fmt)
    assert (good.host, good.ip_address, good.status_code, good.query_string) == (
        "shop.example",
        "1.2.3.4",
        200,
        "b=1",
    )
    assert good.timestamp == dt.datetime(2026, 10, 10, 20, 55, 36, 250000)
    assert (good.request_time_ms, good.user_agent, good.geoip_country_code) == (500, AGENT, "DE")
    assert good.response_size is None  # the format has no $body_bytes_sent
    assert (dashes.reject_reason, dashes.host, dashes.request_time_ms) == (None, None, None)
    assert (dashes.user_agent, dashes.geoip_country_code) == (None, None)
    assert [r.reject_reason for r in (bad_time, bad_ts, broken)] == [
        "bad_request_time",
        "bad_timestamp",
        "unparseable",
    ]
    assert broken.value == lines[4] and broken.host is None


def test_json_lines_are_unescaped_and_unset_values_are_null(spark, tmp_path: Path) -> None:
    fmt = (
        'log_format j escape=json \'{"t":"$time_iso8601","ip":"$remote_addr",\'\n'
        '  \'"req":"$request","st":$status,"ua":"$http_user_agent",\'\n'
        '  \'"up":"$upstream_response_time","u":"$remote_user"}\';'
    )
    agent = 'Bot \\"quoted\\" \\\\ caf\\u00e9 \\ud83d\\ude00'
    lines = [
        '{"t":"2026-10-10T13:55:36-07:00","ip":"::1","req":"GET /x HTTP/1.1","st":200,'
        f'"ua":"{agent}","up":"0.010 : 0.020","u":""}}',
        '{"t":"2026-10-10T13:55:36+00:00","ip":"1.2.3.4","req":"GET /x HTTP/1.1","st":200,'
        '"ua":"a","up":"0.010, x","u":"bob"}',
    ]
    good, bad = read(spark, write(tmp_path, lines), fmt)
    assert good.reject_reason is None
    assert (good.timestamp, good.ip_address, good.url) == (T_UTC, "::1", "/x")
    assert good.user_agent == 'Bot "quoted" \\ café \U0001f600'
    assert (good.upstream_response_time_ms, good.upstream_attempts, good.remote_user) == (
        30,
        2,
        None,
    )
    assert (bad.reject_reason, bad.value) == ("bad_upstream_time", lines[1])


# ---- the client address ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "xff", "client"),
    [
        # the balancer appended the client it saw; the spoofed left-most entries are not read
        ("10.0.1.5", "6.6.6.6, 203.0.113.7", "203.0.113.7"),
        # a chain of trusted proxies: the first untrusted address from the right
        ("10.0.1.5", "198.51.100.9, 203.0.113.7, 10.0.2.8, 10.0.3.1", "203.0.113.7"),
        # a peer that is not a trusted proxy is the client, whatever it says
        ("198.51.100.1", "203.0.113.7", "198.51.100.1"),
        # no header: the peer
        ("10.0.1.5", "-", "10.0.1.5"),
        # IPv6, bracketed with a port, and IPv4 with a port
        ("10.0.1.5", "2001:db8:1::7", "2001:db8:1::7"),
        ("10.0.1.5", "[2001:db8:1::7]:443", "2001:db8:1::7"),
        ("fd00::5", "203.0.113.7:5555", "203.0.113.7"),
        # trusted all the way: the left-most address
        ("10.0.1.5", "10.9.9.9, 10.0.2.8", "10.9.9.9"),
        # garbage in the header: the trusted proxy that passed it on
        ("10.0.1.5", "203.0.113.7, unknown, 10.0.2.8", "10.0.2.8"),
        ("10.0.1.5", ", ,", "10.0.1.5"),
    ],
)
def test_the_client_is_the_right_most_untrusted_forwarded_address(
    spark, tmp_path: Path, peer: str, xff: str, client: str
) -> None:
    line = f'{peer} - - [{T}] "GET / HTTP/1.1" 200 5 "-" "{AGENT}" "{xff}"'
    rule = ClientRule.parse("x-forwarded-for", "10.0.0.0/8,fd00::/8")
    (row,) = read(spark, write(tmp_path, [line]), "main", rule)
    assert (row.reject_reason, row.ip_address, row.remote_addr) == (None, client, peer)


def test_without_the_rule_the_header_is_only_kept(spark, tmp_path: Path) -> None:
    line = f'10.0.1.5 - - [{T}] "GET / HTTP/1.1" 200 5 "-" "{AGENT}" "203.0.113.7"'
    (row,) = read(spark, write(tmp_path, [line]), "main")
    assert (row.ip_address, row.forwarded_for) == ("10.0.1.5", "203.0.113.7")
    assert "remote_addr" not in row.asDict()  # combined's fast path reads no format columns


# ---- into the lakehouse --------------------------------------------------------------------


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
    # Parquet dictionaries are off for the unique-ish columns the table has, and named for
    # no column it lacks; a property an older logberg set for a missing one is removed.
    request_id = f"{NO_DICTIONARY_PROP}request_id"
    assert no_dictionary_columns(spark) == {"event_id", "url", "referer"} | ROW_UNIQUE
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
    from tests.test_ingest import counts, expected, generate

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


def test_the_cli_keeps_the_logging_format_apart_and_fails_fast(capsys) -> None:
    from logberg import cli
    from logberg.cli.ingest import ingest_config

    a = cli.build_parser().parse_args(
        ["--log-format", "json", "ingest", "--log-format", "ingress-nginx"]
    )
    assert (a.log_format, a.nginx_format) == ("json", "ingress-nginx")
    assert ingest_config(a).reading.log_format.name == "ingress-nginx"
    assert cli.main(["ingest", "--log-format", "$remote_addr$status"]) == 2
    assert "--log-format: $remote_addr and $status" in capsys.readouterr().err
    assert cli.main(["ingest", "--client-ip", "x-forwarded-for"]) == 2
    assert "--trusted-proxies" in capsys.readouterr().err
