"""Ingest's reader (dev.logberg.LogLines): log files parsed while they are read.

The oracle is what ingest did before it: Spark's own text source, one split per file, line
numbers from the row index, and the parser as a UDF (`parse_lines`). Both must give the
same rows, line numbers included, for every way a file can end its lines.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from logberg.pipeline.ingest.plan import list_inputs
from logberg.pipeline.ingest.reader import RejectSink, read_parsed, sample_agents
from logberg.pipeline.parse import LINES_SOURCE, parse_lines

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
    assert sample_agents(spark, [listed]) == [GOOD.split('"')[5]]


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
    with pytest.raises(Exception, match="no RejectCollector registered with id nope"):
        _load(spark, files=_uri(tmp_path / "x.log"), rejects="nope").collect()
    with pytest.raises(Exception, match=r"missing\.log"):
        read_parsed(spark, [_uri(tmp_path / "missing.log")]).collect()
