"""`--log-format` and `--client-ip`: nginx formats compiled once, lines scanned by them on the
JVM (dev.logberg.LogFormat), the client taken from X-Forwarded-For behind trusted proxies.

Each case writes lines by hand, reads them with ingest's reader and checks every typed
value. Ingesting into the lakehouse (the schema evolution of access_logs, the run and
rejects tables) is tests/integration/test_log_format_tables.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from logberg.errors import ConfigError
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
