"""The lakehouse plumbing without services: SQL quoting through Spark's own parser, the
table definitions, and the JVM parser's field list and reject reasons as Python sees them."""

from __future__ import annotations

import datetime as dt
import functools
import threading
from typing import Any

import pytest
from py4j.java_gateway import get_field
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.testing import assertDataFrameEqual

from logberg.lakehouse import rows, schema, sql
from logberg.lakehouse.parallel import concurrently
from logberg.pipeline.parse import RejectReason, parse_lines, parser_return_type, to_access_rows

AWKWARD = [
    "plain",
    "it's",
    "''",
    "back\\slash",
    "ends with a backslash\\",
    "\\'",
    "\\u0041 is not A",
    "\\n is not a newline",
    "a real\nnewline and\ttab",
    "é ☃ 𝄞 中文",
    '"double" quotes',
    "%_ like wildcards",
    "",
]


@pytest.mark.parametrize("value", AWKWARD)
def test_literals_read_back_exactly(spark: SparkSession, value: str) -> None:
    assert spark.sql(f"SELECT {sql.literal(value)} AS v").collect()[0].v == value


def test_literal_lists_and_maps(spark: SparkSession) -> None:
    options = {"k'1": "v\\1", "k2": ""}
    row = spark.sql(
        f"SELECT array({sql.literals(AWKWARD)}) AS a, {sql.map_literal(options)} AS m"
    ).collect()[0]
    assert row.a == AWKWARD
    assert row.m == {"k'1": "v\\1", "k2": ""}


@pytest.mark.parametrize("name", ["plain", "with space", "back`tick", "ünï"])
def test_identifiers_read_back_exactly(spark: SparkSession, name: str) -> None:
    df = spark.sql(f"SELECT 1 AS {sql.identifier(name)}")
    assert df.columns == [name]


def test_dates_and_timestamps(spark: SparkSession) -> None:
    days = {dt.date(2025, 1, 2), dt.date(2024, 12, 31)}
    assert sql.dates_in("d", days) == "d IN (DATE '2024-12-31', DATE '2025-01-02')"
    aware = dt.datetime(2025, 3, 1, 13, 0, 0, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    got = spark.sql(f"SELECT {sql.timestamp_literal(aware)} AS t").collect()[0].t
    assert got.replace(tzinfo=dt.timezone.utc) == aware  # the session time zone is UTC


UTC = dt.timezone.utc
RUN_ROWS: dict[str, list[tuple[Any, ...]]] = {
    "analytics_runs": [
        ("r1", dt.datetime(2025, 1, 6, 23, 59, 59, 999999, tzinfo=UTC),
         dt.datetime(2025, 1, 7, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
         ["a", "it's"], [dt.date(2025, 1, 6)], [], 1.25, 2**62),
        ("r2", dt.datetime(2025, 1, 8, tzinfo=UTC), None, [], [], [], 0.0, None),
    ],
    "ingested_files": [
        (f"file:///in/{name}", 10**12, dt.datetime(2025, 1, 6, tzinfo=UTC), "run", 3, 2, 1, None)
        for name in AWKWARD
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", list(RUN_ROWS))
@pytest.mark.parametrize("count", [0, 1, 2, len(AWKWARD)])
def test_rows_frame_equals_create_data_frame(spark: SparkSession, name: str, count: int) -> None:
    """Literal rows (no Python worker: no RDD in the plan) hold what createDataFrame would."""
    table = next(t for t in schema.ALL_TABLES if t.name == name)
    data = (RUN_ROWS[name] * len(AWKWARD))[:count]
    df = rows.rows_frame(spark, data, table.struct())
    assert "LogicalRDD" not in df._jdf.queryExecution().analyzed().toString()
    assertDataFrameEqual(df, spark.createDataFrame(data, table.struct()), checkRowOrder=True)
    assert df.schema.names == table.names


def test_rows_frame_past_the_literal_limit(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "LITERAL_ROWS", 1)
    data = RUN_ROWS["analytics_runs"]
    df = rows.rows_frame(spark, data, schema.ANALYTICS_RUNS.struct())
    assertDataFrameEqual(df, spark.createDataFrame(data, schema.ANALYTICS_RUNS.struct()))
    with pytest.raises(ValueError, match="a row of 2 values for 8 columns"):
        rows.rows_frame(spark, [("r", None)], schema.ANALYTICS_RUNS.struct())


def test_every_table_definition_parses_to_its_schema(spark: SparkSession) -> None:
    for table in schema.ALL_TABLES:
        struct = table.struct()
        assert struct.names == table.names, table
        required = {c.name for c in table.columns if not c.nullable}
        assert {f.name for f in struct.fields if not f.nullable} == required, table
        ddl = table.create_sql()
        assert ddl.startswith(f"CREATE TABLE IF NOT EXISTS {table.qualified} (")
        # Spark's parser takes the whole statement (the catalog is not asked to plan it).
        plan: Any = spark._jsparkSession.sessionState().sqlParser().parsePlan(ddl)
        assert "CreateTable" in plan.getClass().getSimpleName()


def test_table_names_are_unique() -> None:
    names = [t.name for t in schema.ALL_TABLES]
    assert len(names) == len(set(names))


def test_access_rows_have_the_table_columns_in_order(spark: SparkSession) -> None:
    line = '1.2.3.4 - - [01/Jan/2025:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "a"'
    lines = spark.createDataFrame(
        [("file:/x.log", 1, line)], "source_file STRING, line_number BIGINT, value STRING"
    )
    rows = to_access_rows(parse_lines(lines), F.current_timestamp())
    assert rows.columns == schema.ACCESS_LOGS.names
    got = {f.name: f.dataType.simpleString() for f in rows.schema.fields}
    want = {f.name: f.dataType.simpleString() for f in schema.ACCESS_LOGS.struct().fields}
    assert got == want


def test_python_and_the_jvm_agree_on_fields_and_reject_reasons(spark: SparkSession) -> None:
    jvm: Any = spark.sparkContext._jvm
    labels = [get_field(r, "label") for r in jvm.dev.logberg.Reject.values()]
    assert labels == [r.value for r in RejectReason]
    fields = [get_field(f, "column") for f in jvm.dev.logberg.Field.values()]
    struct = spark.sql(f"SELECT CAST(NULL AS {parser_return_type(spark)}) AS s").schema
    parsed = struct["s"].dataType
    assert isinstance(parsed, StructType) and parsed.names == fields
    # reject_reason ends the fields every line has; the format columns follow it
    base = fields.index("reject_reason") + 1
    assert fields[base:] == [c.name for c in schema.FORMAT_COLUMNS]
    # The source's columns: the file and line, the raw rejected line (and its bytes when they
    # are not UTF-8), then the same fields.
    # combined lines are read without the format columns; a client rule (or a format) adds them
    reader = spark.read.format("dev.logberg.LogLines").option("files", "file:/none")
    head = ["source_file", "line_number", "value", "raw_bytes"]
    assert reader.load().columns == [*head, *fields[:base]]
    wide = reader.option("client", "10.0.0.0/8").load()
    assert wide.columns == [*head, *fields]


def test_steps_run_at_once_and_all_finish_before_the_first_error() -> None:
    """Analytics' writes and ingest's CREATEs run together: three steps that each wait for
    all three to be running meet (in sequence the first would wait alone and break the barrier); a
    failing step's error is raised only after the others have finished."""
    meet = threading.Barrier(3, timeout=60)
    done: list[int] = []

    def step(i: int) -> None:
        meet.wait()
        if i == 0:
            raise ValueError("step 0 failed")
        done.append(i)

    with pytest.raises(ValueError, match="step 0 failed"):
        concurrently([functools.partial(step, i) for i in range(3)])
    assert sorted(done) == [1, 2]
