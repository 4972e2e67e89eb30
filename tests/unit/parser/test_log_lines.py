"""Ingest's reader (dev.logberg.LogLines): log files parsed while they are read.

The oracle is what ingest did before it: Spark's own text source, one split per file, line
numbers from the row index, and the parser as a UDF (`parse_lines`). Both must give the
same rows, line numbers included, for every way a file can end its lines.
"""

from __future__ import annotations

import datetime as dt
import gzip
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from logberg.pipeline.ingest.plan import list_inputs
from logberg.pipeline.ingest.reader import (
    REJECTS_SOURCE,
    RejectSink,
    read_good_rows,
    read_parsed,
)
from logberg.pipeline.logformat import ClientRule, Reading, compile_format
from logberg.pipeline.parse import (
    DERIVED_COLUMNS,
    LINES_SOURCE,
    access_columns,
    parse_lines,
    to_access_rows,
)
from tests.conftest import REPO

GOOD = (
    '1.2.3.4 - - [10/Jan/2025:13:55:36 +0100] "GET /a/B.JPG?x=1 HTTP/1.1" 200 12 "-" '
    '"Mozilla/5.0 (X11; Linux x86_64) é" "9.9.9.9"'
)
BAD_STATUS = GOOD.replace(" 200 ", " 999 ")


def _uri(path: Path) -> str:
    """The file's URI as ingest lists it (Hadoop's `file:/...`; plain names only here)."""
    return f"file:{path}"


@contextmanager
def _one_split_per_file(spark: SparkSession) -> Iterator[None]:
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    saved = {k: spark.conf.get(k) for k in keys}
    try:
        for k in keys:
            spark.conf.set(k, str(1 << 40))
        yield
    finally:
        for k, v in saved.items():
            spark.conf.set(k, str(v))


def _oracle(spark: SparkSession, paths: list[Path]) -> list[Row]:
    with _one_split_per_file(spark):
        raw = spark.read.text([str(p) for p in paths])
        lines = raw.select(
            "value",
            F.col("_metadata.file_path").alias("source_file"),
            (F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1)) + 1).alias(
                "line_number"
            ),
        ).where(F.col("value") != "")
        rejected = F.col("reject_reason").isNotNull()
        parsed = parse_lines(lines).select(
            "*",
            F.when(rejected & ~F.is_valid_utf8("value"), F.col("value").cast("binary")).alias(
                "raw_bytes"
            ),
        )
        parsed = parsed.withColumn("value", F.when(rejected, F.col("value")))
        return parsed.select(*_columns(spark)).collect()


def _columns(spark: SparkSession) -> list[str]:
    return read_parsed(spark, ["file:/unused.log"]).columns


def _files(tmp_path: Path) -> list[Path]:
    """Every line ending, an empty line, a byte order mark, gzip, bad UTF-8, no last EOL."""
    crlf = "\ufeff" + GOOD + "\r\n" + "garbage\r\r\n" + GOOD + "\r" + BAD_STATUS
    files = {
        "a.log": (GOOD + "\n" + "garbage" + "\n\n" + BAD_STATUS + "\n").encode(),
        "b.log": crlf.encode(),
        "c.log": GOOD.encode()
        + b"\n"
        + GOOD.replace("é", "\udcff").encode(errors="surrogateescape")
        + b"\ngarbage \xff\n",
        "d.log.gz": gzip.compress(crlf.encode()),
        "e.log": b"",
        "f.log": b"\n\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return [tmp_path / name for name in files]


def test_rows_match_sparks_text_source_and_the_udf(spark, tmp_path: Path) -> None:
    paths = _files(tmp_path)
    got = read_parsed(spark, [_uri(p) for p in paths])
    assert got.rdd.getNumPartitions() == len(paths)  # one task per file: exact line numbers
    want = _oracle(spark, paths)
    assertDataFrameEqual(got, want)
    # The cases the oracle agrees on, spelled out: b.log's BOM is dropped, CR, CR CR LF and
    # a missing last EOL end lines; c.log's bad byte is a replacement character.
    b = sorted((r.line_number, r.reject_reason) for r in want if r.source_file.endswith("b.log"))
    assert b == [(1, None), (2, "unparseable"), (4, None), (5, "bad_status")]
    c = [(r.user_agent, r.raw_bytes) for r in want if r.source_file.endswith("c.log")]
    assert c[1][0].endswith("\ufffd") and c[1][1] is None  # kept: no raw bytes
    assert c[2] == (None, bytearray(b"garbage \xff"))  # rejected: its exact bytes
    assert any(r.source_file.endswith("d.log.gz") for r in want)


def test_line_ends_and_non_ascii_bytes_at_every_position_of_a_word(spark, tmp_path: Path) -> None:
    # The reader looks for line ends and non-ASCII bytes eight bytes at a time: lines of
    # every length around a word, each end kind, and a non-ASCII byte (valid or not) at
    # every offset, in one file so that lines start at every alignment too.
    ends = ["\n", "\r", "\r\n"]
    data = b"".join(("z" * n + ends[n % 3]).encode() for n in range(1, 26))
    for k in range(17):
        data += b"a" * k + "é".encode() + b"b" * (16 - k) + b"\n"
        data += b"a" * k + b"\xff" + b"b" * (16 - k) + b"\r\n"
    data += GOOD.encode() + b"\r" + b"q" * 9  # the last line has no end
    path = tmp_path / "words.log"
    path.write_bytes(data)
    got = read_parsed(spark, [_uri(path)])
    assertDataFrameEqual(got, _oracle(spark, [path]))
    assert got.count() == 25 + 2 * 17 + 2


def test_a_crlf_split_across_reads_and_a_line_longer_than_the_buffer(spark, tmp_path: Path) -> None:
    # The reader's buffer starts at 1 MiB: the first line fills it up to its CR, whose LF
    # comes with the next read; the next line is longer than the buffer.
    first = "x" * ((1 << 20) - 1)
    long_agent = GOOD.replace('"9.9.9.9"', '"' + "y" * (3 << 20) + '"')
    path = tmp_path / "long.log"
    path.write_bytes(f"{first}\r\n{GOOD}\r\n{long_agent}\n{BAD_STATUS}".encode())
    got = read_parsed(spark, [_uri(path)]).select(
        "line_number", "reject_reason", F.length("forwarded_for").alias("fwd")
    )
    assertDataFrameEqual(
        got,
        [
            Row(line_number=1, reject_reason="unparseable", fwd=None),
            Row(line_number=2, reject_reason=None, fwd=7),
            Row(line_number=3, reject_reason=None, fwd=3 << 20),
            Row(line_number=4, reject_reason="bad_status", fwd=7),
        ],
    )


def test_file_names_that_need_escaping_in_a_uri(spark, tmp_path: Path) -> None:
    path = tmp_path / "access 50%.log"
    path.write_text(GOOD + "\n")
    (listed,) = list_inputs(spark, [tmp_path.as_uri()], None)
    assert listed.uri.endswith("/access%2050%25.log")
    (row,) = read_parsed(spark, [listed.uri]).collect()
    assert (row.source_file, row.line_number, row.ip_address) == (listed.uri, 1, "1.2.3.4")


def test_the_sink_keeps_each_rejected_line_once(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    lines = [GOOD, "garbage", BAD_STATUS, GOOD, "1"]
    path.write_text("\n".join(lines) + "\n")
    sink = RejectSink(spark, budget_chars=10_000)
    parsed = read_parsed(spark, [_uri(path)], sink)
    parsed.collect()
    parsed.collect()  # read twice: each line is still kept once
    kept = sink.lines()
    assert kept is not None
    frame, count = kept
    reasons = {2: "unparseable", 3: "bad_status", 5: "unparseable"}
    want = [
        Row(source_file=_uri(path), line_number=n, value=lines[n - 1], reject_reason=r)
        for n, r in reasons.items()
    ]
    assertDataFrameEqual(frame, want)
    assert count == 3


def test_the_sink_over_budget_keeps_nothing_and_says_so(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("garbage " * 3 + "\n" + "more garbage " * 3 + "\n")
    sink = RejectSink(spark, budget_chars=30)
    rows = read_parsed(spark, [_uri(path)], sink).collect()
    assert [r.reject_reason for r in rows] == ["unparseable", "unparseable"]
    assert sink.lines() is None


def _load(spark: SparkSession, **options: str) -> DataFrame:
    return spark.read.format(LINES_SOURCE).options(**options).load()


def test_a_missing_option_or_file_is_a_clear_error(spark, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="set the option 'files'"):
        _load(spark).collect()
    with pytest.raises(Exception, match="the option 'rejects_budget' is a number"):
        _load(spark, files=_uri(tmp_path / "x.log"), rejects="a", rejects_budget="many").collect()
    with pytest.raises(Exception, match="set the option 'id'"):
        spark.read.format(REJECTS_SOURCE).load().collect()
    with pytest.raises(Exception, match="no rejects kept under id nope"):
        spark.read.format(REJECTS_SOURCE).option("id", "nope").load().collect()
    with pytest.raises(Exception, match=r"missing\.log"):
        read_parsed(spark, [_uri(tmp_path / "missing.log")]).collect()


# ---- the columns the reader derives (read_parsed(..., derived=True)) --------------------------


def _line(when: str, status: int = 200, agent: str = "Mozilla/5.0 (X11; Linux x86_64)") -> str:
    return f'1.2.3.4 - - [{when}] "GET /p/a.html HTTP/1.1" {status} 5 "-" "{agent}"'


# Lines whose derived columns are easy to get wrong: ISO weeks at year ends, offsets that move
# a line across midnight or into another year, the epoch's edge, every status class, agents
# of each kind, none ("-"), an empty one and one that is not ASCII.
EDGES = [
    _line("29/Dec/2024:12:00:00 +0000"),  # Sunday: 2024-W52
    _line("30/Dec/2024:12:00:00 +0000"),  # Monday: 2025-W01
    _line("03/Jan/2021:12:00:00 +0000"),  # Sunday: 2020-W53
    _line("31/Dec/2026:12:00:00 +0000"),  # Thursday: 2026-W53
    _line("01/Jan/2025:00:30:00 +0100"),  # UTC 2024-12-31 23:30
    _line("31/Dec/2024:23:30:00 -0500"),  # UTC 2025-01-01 04:30
    _line("31/Dec/1969:23:59:59 +0000"),  # before the epoch
    *[_line("10/Jan/2025:13:55:36 +0000", status) for status in (100, 199, 200, 299, 300)],
    *[_line("10/Jan/2025:13:55:36 +0000", status) for status in (399, 400, 499, 500, 599)],
    _line("10/Jan/2025:13:55:36 +0000", agent="Googlebot/2.1 (+http://www.google.com/bot.html)"),
    _line("10/Jan/2025:13:55:36 +0000", agent="Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X)"),
    _line("10/Jan/2025:13:55:36 +0000", agent="Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)"),
    _line("10/Jan/2025:13:55:36 +0000", agent="-"),
    _line("10/Jan/2025:13:55:36 +0000", agent=""),
    _line("10/Jan/2025:13:55:36 +0000", agent="curl/8.5.0 é"),
    "garbage",
    BAD_STATUS,
]


def _generated(tmp_path: Path, fmt: str) -> str:
    """A small generated log in `fmt` (malformed lines included); its file's URI."""
    out = tmp_path / fmt
    subprocess.run(
        [
            sys.executable, "-m", "generator", "--output", out.as_uri(), "--num-files", "1",
            "--lines-per-file", "3000", "--start-date", "2025-12-28", "--end-date",
            "2026-01-02", "--seed", "11", "--malformed-rate", "0.01", "--no-gzip", "--quiet",
            "--format", fmt,
        ],
        check=True, cwd=REPO, capture_output=True,
    )  # fmt: skip
    (path,) = (p for p in out.rglob("*.log") if "_manifests" not in p.parts)
    return _uri(path)


@pytest.mark.parametrize("fmt", ["combined", "ingress-nginx", "json"])
def test_the_readers_derived_columns_equal_the_transforms(spark, tmp_path: Path, fmt) -> None:
    """Ingest takes event_id, the calendar, status and device columns from the reader; they
    must be what the transforms (`enrich`, `event_id`) compute from the same lines."""
    uris = [_generated(tmp_path, fmt)]
    if fmt == "combined":
        edges = tmp_path / "edges" / "edges 50%.log"  # the event id hashes the URI as listed
        edges.parent.mkdir()
        edges.write_text("\n".join(EDGES) + "\n")
        uris += [f.uri for f in list_inputs(spark, [edges.parent.as_uri()], None)]
    reading = Reading(compile_format(fmt), ClientRule())
    at = F.lit("2025-06-01 00:00:00").cast("timestamp")
    derived = read_parsed(spark, uris, None, reading, derived=True)
    got = to_access_rows(derived, at)
    want = to_access_rows(read_parsed(spark, uris, None, reading), at)
    assert got.count() > 2900
    assertDataFrameEqual(got, want)
    rejected = derived.where(F.col("reject_reason").isNotNull())
    assert rejected.count() > 0
    assert rejected.where(" OR ".join(f"{c} IS NOT NULL" for c in DERIVED_COLUMNS)).count() == 0
    if fmt != "combined":
        return
    rows = {r.line_number: r for r in got.where(F.col("source_file") == uris[1]).collect()}
    week = {n: (rows[n].week_year, rows[n].week_of_year) for n in (1, 2, 3, 4)}
    assert week == {1: (2024, 52), 2: (2025, 1), 3: (2020, 53), 4: (2026, 53)}
    assert (str(rows[5].date), rows[5].hour, rows[5].year) == ("2024-12-31", 23, 2024)
    assert (str(rows[6].date), rows[6].hour, rows[6].week_year) == ("2025-01-01", 4, 2025)
    assert (str(rows[7].date), rows[7].hour) == ("1969-12-31", 23)
    classes = ["Informational", "Success", "Redirect", "Client Error", "Server Error"]
    assert [rows[n].status_category for n in range(8, 18)] == [c for c in classes for _ in "ab"]
    assert (rows[18].device_type, rows[18].is_bot) == ("bot", True)
    assert [rows[n].device_type for n in (19, 20)] == ["tablet", "mobile"]
    assert (rows[21].user_agent, rows[21].device_type, rows[21].is_bot) == (None, "other", False)
    assert rows[1].event_id.endswith("-1") and len(rows[1].event_id.split("-")[0]) == 16


# ---- the table's rows straight from the reader (read_good_rows) ------------------------------

STAMP = dt.datetime(2025, 6, 1, 12, 30, 15, 123456, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("fmt", ["combined", "ingress-nginx", "json"])
def test_good_rows_are_the_access_rows_and_every_file_is_counted(
    spark, tmp_path: Path, fmt
) -> None:
    """Ingest writes the reader's rows as they are: they must be `to_access_rows` of the
    same lines, extras included (a format's own, another format's and an unknown variable's
    columns: NULL where these lines have none); the sink counts each file's lines and
    rejects and keeps the rejected lines, as a read of every line would give them."""
    uris = [_generated(tmp_path, fmt)]
    if fmt == "combined":
        uris += [_uri(p) for p in _files(tmp_path)]  # line endings, gzip, bad UTF-8, empty
    reading = Reading(compile_format(fmt), ClientRule())
    own = [c.name for c in reading.columns()]
    extras = own + [c for c in ("upstream_attempts", "remote_addr", "x_unknown") if c not in own]
    sink = RejectSink(spark)
    got = read_good_rows(
        spark, uris, sink, reading, access_columns(extras), ("processed_timestamp", STAMP)
    )
    every = read_parsed(spark, uris, None, reading, derived=True)
    want = to_access_rows(every, F.lit(STAMP), extras=extras)
    assert got.columns == want.columns
    assert not got.schema["event_id"].nullable  # as the table has it: no check to add
    assert got.count() > 2900
    assertDataFrameEqual(got, want)
    lines = every.groupBy("source_file").agg(
        F.count(F.lit(1)).alias("lines"), F.count("reject_reason").alias("rejected")
    )
    counted = sink.counts()
    assert counted == {r.source_file: (r.lines, r.rejected, 0) for r in lines.collect()} | {
        u: (0, 0, 0) for u in uris if u.endswith(("e.log", "f.log"))
    }
    assert set(counted) == set(uris)
    kept = sink.lines()
    assert kept is not None
    rejected = every.where(F.col("reject_reason").isNotNull())
    assertDataFrameEqual(
        kept[0].select("source_file", "line_number", "reject_reason"),
        rejected.select("source_file", "line_number", "reject_reason"),
    )
    assert kept[1] == rejected.count() > 0


def test_good_rows_options_that_cannot_work_are_clear_errors(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text(GOOD + "\n")
    files = _uri(path)
    with pytest.raises(Exception, match="the option 'columns' needs the option 'rejects'"):
        _load(spark, files=files, derived="true", columns="ip_address STRING").collect()
    with pytest.raises(Exception, match="asks for status_code as STRING; the lines have it as INT"):
        _load(spark, files=files, rejects="t1", columns="status_code STRING").collect()
    with pytest.raises(Exception, match="asks for nothing_here NOT NULL"):
        _load(spark, files=files, rejects="t2", columns="nothing_here INT NOT NULL").collect()
    with pytest.raises(Exception, match="'stamp_micros' is microseconds since the epoch, not"):
        _load(
            spark, files=files, rejects="t3", columns="at TIMESTAMP", stamp_column="at",
            stamp_micros="soon",
        ).collect()  # fmt: skip
    with pytest.raises(Exception, match="'stamp_column' names at, which the option 'columns'"):
        _load(
            spark, files=files, rejects="t4", columns="ip_address STRING", stamp_column="at"
        ).collect()
    with pytest.raises(Exception, match="no counts kept under id nope"):
        spark.read.format(REJECTS_SOURCE).option("id", "nope").option(
            "read", "counts"
        ).load().collect()
