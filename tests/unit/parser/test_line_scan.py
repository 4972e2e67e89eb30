"""The JVM line parser's edges (dev.logberg.LineScan, through the ParseLine UDF) in Spark.

Each case names the field that matters; the expected values are written out by hand (dates
checked against Python's datetime where that is an independent oracle).
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import Row

from logberg.pipeline.parse import RejectReason, parse_lines

UTC = dt.UTC


def _line(
    time: str = "10/Jan/2025:13:55:36 +0000",
    request: str = "GET / HTTP/1.1",
    status: str = "200",
    size: str = "1",
    agent: str = "ua",
    ip: str = "1.2.3.4",
    tail: str = "",
) -> str:
    return f'{ip} - - [{time}] "{request}" {status} {size} "-" "{agent}"{tail}'


def _parse(spark, lines: list[str]) -> list[Row]:
    df = spark.createDataFrame([(i, v) for i, v in enumerate(lines)], "i INT, value STRING")
    return sorted(parse_lines(df).collect(), key=lambda r: r.i)


def _ts(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> dt.datetime:
    return dt.datetime(y, mo, d, h, mi, s, tzinfo=UTC)


TIMES = [
    ("10/Jan/2025:13:55:36 +0000", _ts(2025, 1, 10, 13, 55, 36)),
    ("10/jan/2025:13:55:36 +0000", _ts(2025, 1, 10, 13, 55, 36)),  # month in any case
    ("10/JAN/2025:13:55:36 +0000", _ts(2025, 1, 10, 13, 55, 36)),
    ("29/Feb/2024:23:59:59 +0000", _ts(2024, 2, 29, 23, 59, 59)),  # leap year
    ("29/Feb/2000:00:00:00 +0000", _ts(2000, 2, 29)),  # divisible by 400
    ("01/Mar/2025:00:30:00 +0100", _ts(2025, 2, 28, 23, 30)),  # back over a month end
    ("31/Dec/1969:23:59:59 +0000", _ts(1969, 12, 31, 23, 59, 59)),  # before the epoch
    ("01/Jan/2025:00:00:00 +1800", _ts(2024, 12, 31, 6)),  # the largest offset
    ("01/Jan/2025:00:00:00 -1800", _ts(2025, 1, 1, 18)),
    ("15/Aug/2025:10:00:00 -0930", _ts(2025, 8, 15, 19, 30)),
    ("29/Feb/2023:00:00:00 +0000", None),  # not a leap year
    ("29/Feb/1900:00:00:00 +0000", None),  # divisible by 100, not 400
    ("31/Apr/2025:00:00:00 +0000", None),
    ("00/Jan/2025:00:00:00 +0000", None),
    ("10/Jan/2025:24:00:00 +0000", None),
    ("10/Jan/2025:23:60:00 +0000", None),
    ("10/Jan/2025:23:59:60 +0000", None),  # no leap seconds
    ("10/Jan/2025:00:00:00 +1801", None),  # beyond 18 hours
    ("10/Jan/2025:00:00:00 +0060", None),
    ("10/Jan/2025:00:00:00 +00:00", None),
    ("10/Jan/2025:00:00:00 Z", None),
    ("10/Jan/2025:00:00:00", None),
    ("1/Jan/2025:00:00:00 +0000", None),
    ("10/Jan/20250:00:00:00 +0000", None),
    ("10/Jnu/2025:00:00:00 +0000", None),
    ("10-Jan-2025:00:00:00 +0000", None),
    ("10/Jan/2025 00:00:00 +0000", None),
    ("", None),
]


def test_timestamps(spark) -> None:
    rows = _parse(spark, [_line(time=t) for t, _ in TIMES])
    for (text, want), row in zip(TIMES, rows, strict=True):
        got = row.timestamp.astimezone(UTC) if row.timestamp else None
        assert got == want, text
        assert row.reject_reason == (None if want else "bad_timestamp"), text
        if want is not None:  # Python's own parser agrees
            assert dt.datetime.strptime(text, "%d/%b/%Y:%H:%M:%S %z") == want, text


@pytest.mark.parametrize(
    ("field", "text", "reason", "value"),
    [
        ("status", "100", None, 100),
        ("status", "599", None, 599),
        ("status", "600", "bad_status", None),
        ("status", "099", "bad_status", None),
        ("status", "20", "bad_status", None),
        ("status", "2000", "bad_status", None),
        ("status", "-", "bad_status", None),
        ("size", "-", None, 0),
        ("size", "0", None, 0),
        ("size", "9" * 18, None, int("9" * 18)),
        ("size", "1" * 19, "bad_size", None),
        ("size", "1e3", "bad_size", None),
        ("size", "+1", "bad_size", None),
        ("ip", "::1", None, "::1"),
        ("ip", "2001:DB8:0:0:8:800:200C:417A", None, "2001:DB8:0:0:8:800:200C:417A"),
        ("ip", "1", "bad_ip", "1"),
        ("ip", "a" * 46, "bad_ip", "a" * 46),
        ("ip", "1.2.3.4,5.6.7.8", "bad_ip", "1.2.3.4,5.6.7.8"),
        ("ip", "example.com", "bad_ip", "example.com"),
    ],
)
def test_scalar_fields(spark, field, text, reason, value) -> None:
    (row,) = _parse(spark, [_line(**{field: text})])
    column = {"status": "status_code", "size": "response_size", "ip": "ip_address"}[field]
    assert (row.reject_reason, row[column]) == (reason, value)


def test_reasons_come_in_a_fixed_order(spark) -> None:
    worst = _line(ip="?", time="x", status="x", size="x")
    rows = _parse(
        spark,
        [
            worst,
            _line(time="x", status="x", size="x"),
            _line(status="x", size="x"),
            _line(size="x"),
            "nothing like a log line",
        ],
    )
    assert [r.reject_reason for r in rows] == [
        "bad_ip",
        "bad_timestamp",
        "bad_status",
        "bad_size",
        "unparseable",
    ]
    # every reason combined can give; the others need a format's timing fields (test_log_format)
    only_formats = {"bad_request_time", "bad_upstream_time", "bad_request_length"}
    assert {r.reject_reason for r in rows} == {r.value for r in RejectReason} - only_formats


@pytest.mark.parametrize(
    "line",
    [
        "",
        "1.2.3.4",
        '1.2.3.4\t- - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"',  # tab
        '1.2.3.4  - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"',  # 2 spaces
        '1.2.3.4 - - 10/Jan/2025:13:55:36 +0000 "GET / HTTP/1.1" 200 1 "-" "ua"',
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000 "GET / HTTP/1.1" 200 1 "-" "ua"',
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1 200 1 "-" "ua"',
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" ua',
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-"',
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 "-" "ua"',
    ],
)
def test_outside_the_grammar_is_unparseable_with_no_fields(spark, line) -> None:
    (row,) = _parse(spark, [line])
    fields = row.asDict()
    assert fields.pop("reject_reason") == "unparseable"
    fields.pop("i"), fields.pop("value")
    assert set(fields.values()) == {None}


def test_text_fields_keep_every_character(spark) -> None:
    agent = "Mozilla/5.0 (\u00e9\u4e2d\U0001f600) \x01 [x] \\x22"
    rows = _parse(
        spark,
        [
            _line(agent=agent, tail=' "198.51.100.2, 10.0.0.1" "more"'),
            _line(agent="-", tail=' "-"'),
            _line(tail=' "unterminated'),
            _line(tail=" trailing words"),
        ],
    )
    assert (rows[0].user_agent, rows[0].forwarded_for) == (agent, "198.51.100.2, 10.0.0.1")
    assert (rows[1].user_agent, rows[1].forwarded_for) == (None, None)
    assert rows[2].forwarded_for == "unterminated"
    assert rows[3].forwarded_for is None
    assert {r.reject_reason for r in rows} == {None}


REQUESTS = [
    # request -> (method, url, url_path, query_string, protocol, file_extension)
    (
        "GET /a/b.PNG?x=1.y HTTP/1.1",
        ("GET", "/a/b.PNG?x=1.y", "/a/b.PNG", "x=1.y", "HTTP/1.1", "png"),
    ),
    ("POST /a.d/c HTTP/2.0", ("POST", "/a.d/c", "/a.d/c", None, "HTTP/2.0", None)),
    ("GET /a. HTTP/1.1", ("GET", "/a.", "/a.", None, "HTTP/1.1", "")),
    ("GET /?q HTTP/1.1", ("GET", "/?q", "/", "q", "HTTP/1.1", None)),
    ("GET /", ("GET", "/", "/", None, None, None)),  # HTTP/0.9
    ("GET ", ("GET", "", "", None, None, None)),
    ("GET  HTTP/1.1", ("GET", "", "", None, "HTTP/1.1", None)),
    ("A" * 20 + " / HTTP/1.1", ("A" * 20, "/", "/", None, "HTTP/1.1", None)),
    ("A" * 21 + " / HTTP/1.1", (None,) * 6),
    ("get / HTTP/1.1", (None,) * 6),
    ("GET / FTP/1", (None,) * 6),
    ("GET / HTTP/1.1 x", (None,) * 6),
    ("GET / HTTP/1.1 ", (None,) * 6),
    ("-", (None,) * 6),
    (r"\x16\x03\x01", (None,) * 6),
]


def test_request_parts(spark) -> None:
    rows = _parse(spark, [_line(request=r) for r, _ in REQUESTS])
    cols = ("method", "url", "url_path", "query_string", "protocol", "file_extension")
    for (request, want), row in zip(REQUESTS, rows, strict=True):
        assert tuple(row[c] for c in cols) == want, request
        assert (row.request, row.reject_reason) == (request, None)
