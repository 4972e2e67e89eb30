"""Table-driven parser tests: every case the ingest issue names, on a real SparkSession."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from logberg.pipeline.parse import PARSE_UDF, parse_lines, to_access_rows, to_rejects

UA_CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)
UTC = dt.UTC

# (name, line, expected subset of columns | reject reason)
GOOD = [
    (
        "combined",
        f'203.0.113.7 - - [10/Jan/2025:13:55:36 +0000] "GET /shop/item.html?id=3&x=y HTTP/1.1" '
        f'200 5120 "https://www.google.com/" "{UA_CHROME}"',
        dict(
            ip_address="203.0.113.7",
            remote_user=None,
            method="GET",
            url="/shop/item.html?id=3&x=y",
            url_path="/shop/item.html",
            query_string="id=3&x=y",
            protocol="HTTP/1.1",
            status_code=200,
            status_category="Success",
            response_size=5120,
            referer="https://www.google.com/",
            file_extension="html",
            timestamp=dt.datetime(2025, 1, 10, 13, 55, 36, tzinfo=UTC),
            date=dt.date(2025, 1, 10),
            hour=13,
            forwarded_for=None,
            device_type="desktop",
            browser="Chrome",
            os="Windows",
            is_bot=False,
        ),
    ),
    (
        "main format with x-forwarded-for, plus a further trailing field",
        f'10.0.0.1 - alice [10/Jan/2025:13:55:36 +0000] "POST /api/v1/cart HTTP/2.0" 201 17 '
        f'"-" "{UA_CHROME}" "198.51.100.2, 10.0.0.9" "extra"',
        dict(
            remote_user="alice",
            method="POST",
            status_code=201,
            referer=None,
            forwarded_for="198.51.100.2, 10.0.0.9",
            query_string=None,
            file_extension=None,
        ),
    ),
    (
        "ipv6 client",
        f'2001:db8::1 - - [10/Jan/2025:00:00:00 +0000] "GET / HTTP/1.1" 304 - "-" "{UA_CHROME}"',
        dict(
            ip_address="2001:db8::1",
            status_code=304,
            status_category="Redirect",
            response_size=0,
            url_path="/",
        ),
    ),
    (
        "offset east of UTC crossing midnight backwards: date is the UTC date",
        f'1.2.3.4 - - [11/Jan/2025:02:30:00 +0530] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        dict(
            timestamp=dt.datetime(2025, 1, 10, 21, 0, tzinfo=UTC),
            date=dt.date(2025, 1, 10),
            hour=21,
        ),
    ),
    (
        "offset west of UTC crossing midnight forwards",
        f'1.2.3.4 - - [31/Dec/2024:22:15:00 -0300] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        dict(date=dt.date(2025, 1, 1), hour=1, year=2025, week_year=2025, week_of_year=1),
    ),
    (
        "ISO week: 2024-12-30 belongs to 2025-W01",
        f'1.2.3.4 - - [30/Dec/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        dict(year=2024, month=12, day=30, week_year=2025, week_of_year=1),
    ),
    (
        "ISO week: 2021-01-03 belongs to 2020-W53",
        f'1.2.3.4 - - [03/Jan/2021:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        dict(year=2021, week_year=2020, week_of_year=53),
    ),
    (
        "nginx escapes stay text and never break the line",
        r'1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET /search?q=\x22hi\x22 HTTP/1.1" 200 9 '
        r'"-" "Mozilla/5.0 \x22quoted\x22"',
        dict(url=r"/search?q=\x22hi\x22", user_agent=r"Mozilla/5.0 \x22quoted\x22"),
    ),
    (
        "TLS handshake on the plain port: kept, method/protocol NULL, raw request kept",
        r'45.1.2.3 - - [10/Jan/2025:13:55:36 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03" '
        r'400 157 "-" "-"',
        dict(
            method=None,
            url=None,
            protocol=None,
            status_code=400,
            user_agent=None,
            request=r"\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03",
            device_type="other",
        ),
    ),
    (
        "request '-' answered with 400",
        '45.1.2.3 - - [10/Jan/2025:13:55:36 +0000] "-" 400 0 "-" "-"',
        dict(method=None, url=None, protocol=None, request="-", status_category="Client Error"),
    ),
    (
        "HTTP/0.9 'GET /'",
        '45.1.2.3 - - [10/Jan/2025:13:55:36 +0000] "GET /" 400 0 "-" "-"',
        dict(method="GET", url="/", protocol=None),
    ),
    (
        "server error category",
        f'1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET /x HTTP/1.1" 503 0 "-" "{UA_CHROME}"',
        dict(status_category="Server Error"),
    ),
]

HEAD = "1.2.3.4 - - [10/Jan/2025:13:55:36 +0000]"
REST = f'"-" "{UA_CHROME}"'
BAD = [
    ("garbage", "this is not a log line at all", "unparseable"),
    (
        "truncated write",
        '1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "Mozi',
        "unparseable",
    ),
    (
        "impossible date",
        f'1.2.3.4 - - [32/Foo/2025:25:61:00 +0000] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        "bad_timestamp",
    ),
    (
        "bad status",
        f'1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 2x0 1 "-" "{UA_CHROME}"',
        "bad_status",
    ),
    (
        "bad size",
        f'1.2.3.4 - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 -12 "-" "{UA_CHROME}"',
        "bad_size",
    ),
    (
        "bad ip",
        f'not_an_ip - - [10/Jan/2025:13:55:36 +0000] "GET / HTTP/1.1" 200 1 "-" "{UA_CHROME}"',
        "bad_ip",
    ),
]


def _frame(spark, lines):
    return spark.createDataFrame(
        [Row(value=v, source_file="file:/t.log", line_number=i + 1) for i, v in enumerate(lines)]
    )


@pytest.mark.parametrize(("name", "line", "expected"), GOOD, ids=[g[0] for g in GOOD])
def test_good_lines(spark, name, line, expected) -> None:
    rows = to_access_rows(parse_lines(_frame(spark, [line])), F.current_timestamp()).collect()
    assert len(rows) == 1, name
    got = rows[0].asDict()
    for key, value in expected.items():
        if isinstance(value, dt.datetime):
            got[key] = got[key].astimezone(UTC)
        assert got[key] == value, f"{name}: {key}"
    assert got["event_id"].endswith("-1")


@pytest.mark.parametrize(("name", "line", "reason"), BAD, ids=[b[0] for b in BAD])
def test_bad_lines_are_rejected_with_reason(spark, name, line, reason) -> None:
    parsed = parse_lines(_frame(spark, [line]))
    assert to_access_rows(parsed, F.current_timestamp()).count() == 0
    rej = to_rejects(parsed, "run", F.current_timestamp()).collect()
    assert [(r.reason, r.raw_line, r.line_number) for r in rej] == [(reason, line, 1)]


def test_every_line_is_accepted_or_rejected(spark) -> None:
    lines = [g[1] for g in GOOD] + [b[1] for b in BAD]
    parsed = parse_lines(_frame(spark, lines))
    ok = to_access_rows(parsed, F.current_timestamp()).count()
    bad = to_rejects(parsed, "run", F.current_timestamp()).count()
    assert (ok, bad) == (len(GOOD), len(BAD))


def _plan(df) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


@pytest.mark.parametrize("keep", ["ip_address", "reject_reason", "*"])
def test_the_parser_runs_once_per_line_whatever_is_filtered(spark, keep) -> None:
    # A filter on the parse's output must not be rewritten in terms of the raw line: that
    # copies the parser call into the filter once per reference.
    parsed = parse_lines(_frame(spark, ["x"]))
    for df in (
        parsed.where(F.col("reject_reason").isNull()).select(keep),
        parsed.where(F.col("reject_reason").isNotNull()).select(keep),
        to_access_rows(parsed, F.current_timestamp()),
    ):
        plan = _plan(df)
        assert plan.count(f"{PARSE_UDF}(") == 1, plan


def test_rejects_from_the_text_source_keep_bytes_that_are_not_utf8(spark, tmp_path) -> None:
    """Spark's text source hands over a line's bytes as read; the rejects row keeps them
    exactly in raw_bytes and a valid raw_line beside them."""
    bad = b"\xff garbage \xc3("
    (tmp_path / "x.log").write_bytes(bad + b"\nplain garbage\n")
    lines = spark.read.text(str(tmp_path / "x.log")).select(
        F.lit("f").alias("source_file"), F.monotonically_increasing_id().alias("line_number"), "*"
    )
    rows = to_rejects(parse_lines(lines), "r", F.current_timestamp()).orderBy("line_number")
    got = [(r.raw_line, r.raw_bytes) for r in rows.collect()]
    assert got == [(bad.decode(errors="replace"), bytearray(bad)), ("plain garbage", None)]
