"""logberg's jar reached without py4j (so over Spark Connect too): static methods through SQL
`reflect` (`logberg.pipeline.jar`, `dev.logberg.FileUri`), Java functions registered once
per session, and the data sources that keep rejected lines (`RejectLines`) and write one
object whole (`WholeObject`)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from logberg.errors import ConfigError
from logberg.pipeline import jar
from logberg.pipeline.ingest import plan
from logberg.pipeline.ingest.plan import list_inputs
from logberg.pipeline.ingest.reader import REJECTS_SOURCE, RejectSink, read_parsed
from logberg.pipeline.parse import PARSE_UDF, parse_lines, parser_return_type
from logberg.pipeline.report.output import OBJECT_SINK

GOOD = '1.2.3.4 - - [10/Jan/2025:13:55:36 +0100] "GET /a HTTP/1.1" 200 12 "-" "ua"'


def _open_collectors(spark: SparkSession) -> int:
    row = (
        spark.range(1)
        .select(F.reflect(F.lit("dev.logberg.RejectCollector"), F.lit("openCount")))
        .first()
    )
    assert row is not None
    return int(row[0])


# ---- static methods by reflect ----------------------------------------------------------


def test_a_static_value_is_the_java_one(spark) -> None:
    ddl = parser_return_type(spark)
    assert ddl.startswith("STRUCT<") or ddl.startswith("struct<")
    assert spark.sql(f"SELECT CAST(NULL AS {ddl}) AS s").schema["s"].dataType.fieldNames()[0]


def test_a_class_not_on_the_class_path_is_a_config_error(spark) -> None:
    with pytest.raises(ConfigError, match=r"dev\.logberg\.Nope is not on the Spark class path"):
        jar.static_value(spark, "dev.logberg.Nope", "returnType")


def test_functions_are_registered_in_each_session(spark) -> None:
    other = spark.newSession()  # its own function registry
    lines = other.createDataFrame([(GOOD,)], "value STRING")
    assertDataFrameEqual(parse_lines(lines).select("ip_address"), [Row(ip_address="1.2.3.4")])
    assert other.sql(f"SELECT {PARSE_UDF}('x').reject_reason AS r").first() == Row(r="unparseable")
    parse_lines(lines)  # again: no second registration (it would log a warning)


# Names that need escaping in a URI, or not: the listing's URI is Hadoop's Path.toUri, as the
# py4j call gave it before (the oracle here, in the classic test session).
NAMES = ["plain.log", "a b.log", "50%.log", "é ü 日本.log", "x#y.log", "q+r=s&t.log", "[a].log"]


@pytest.mark.parametrize("name", NAMES)
def test_listed_uris_are_hadoops(spark, tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(GOOD + "\n")
    (listed,) = list_inputs(spark, [tmp_path.as_uri()], None)
    raw = spark.read.format("binaryFile").load(str(tmp_path)).select("path").first()
    assert raw is not None
    hadoop_path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path  # the former py4j call
    assert listed.uri == str(hadoop_path(raw.path).toUri().toString())
    (row,) = read_parsed(spark, [listed.uri]).collect()
    assert (row.source_file, row.line_number, row.ip_address) == (listed.uri, 1, "1.2.3.4")


def test_a_listing_without_the_jar_is_a_config_error(spark, tmp_path: Path, monkeypatch) -> None:
    # The listing's own reflect of FileUri is the check that the jar is on the class path.
    (tmp_path / "a.log").write_text(GOOD + "\n")
    monkeypatch.setattr(plan, "FILE_URI", "dev.logberg.Nope")
    with pytest.raises(ConfigError, match=r"dev\.logberg\.Nope is not on the Spark class path"):
        list_inputs(spark, [tmp_path.as_uri()], None)


# ---- rejected lines kept per batch id ------------------------------------------------------


def test_two_batches_at_once_keep_their_own_lines(spark, tmp_path: Path) -> None:
    files = {}
    for name in ("a", "b"):
        path = tmp_path / f"{name}.log"
        path.write_text(f"{GOOD}\n{name}-garbage\n{name}-more\n")
        files[name] = f"file:{path}"
    sinks = {name: RejectSink(spark) for name in files}
    errors: list[BaseException] = []

    def read(name: str) -> None:
        try:
            read_parsed(spark, [files[name]], sinks[name]).collect()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=read, args=(n,)) for n in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for name, uri in files.items():
        kept = sinks[name].lines()
        assert kept is not None
        assertDataFrameEqual(
            kept[0].select("source_file", "line_number", "value"),
            [Row(source_file=uri, line_number=2, value=f"{name}-garbage"),
             Row(source_file=uri, line_number=3, value=f"{name}-more")],
        )  # fmt: skip
        assert kept[1] == 2


def test_reading_the_lines_back_releases_them(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("garbage\n")
    before = _open_collectors(spark)
    sink = RejectSink(spark)
    read_parsed(spark, [f"file:{path}"], sink).collect()
    assert _open_collectors(spark) == before + 1
    kept = sink.lines()
    assert kept is not None and kept[1] == 1
    assert _open_collectors(spark) == before
    # The rows stay readable (a local checkpoint), while the collector is gone.
    assertDataFrameEqual(kept[0].select("value"), [Row(value="garbage")])
    assertDataFrameEqual(kept[0].select("value"), [Row(value="garbage")])
    assert sink.lines() is None  # nothing kept under that id any more
    with pytest.raises(Exception, match=f"no rejects kept under id {sink.id}"):
        spark.read.format(REJECTS_SOURCE).option("id", sink.id).load().collect()


def test_an_overflowed_collector_is_released_by_its_status(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("garbage garbage garbage\n")
    before = _open_collectors(spark)
    sink = RejectSink(spark, budget_chars=5)
    read_parsed(spark, [f"file:{path}"], sink).collect()
    assert sink.lines() is None
    assert _open_collectors(spark) == before


def test_collectors_never_read_back_do_not_pile_up(spark, tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_text("garbage\n")
    sinks = [RejectSink(spark) for _ in range(20)]  # more than RejectCollector.MAX_OPEN (16)
    for sink in sinks:
        read_parsed(spark, [f"file:{path}"], sink).collect()
    assert _open_collectors(spark) == 16
    # The oldest went first: their callers read the files again; the others have their line.
    assert [sink.lines() is None for sink in sinks] == [True] * 4 + [False] * 16
    assert _open_collectors(spark) == 0


def test_the_read_option_is_checked(spark) -> None:
    with pytest.raises(Exception, match="'read' is 'rows', 'status' or 'counts', not 'all'"):
        spark.read.format(REJECTS_SOURCE).option("id", "x").option("read", "all").load()


# ---- one object, whole --------------------------------------------------------------------


def _put(spark: SparkSession, uri: str, *bodies: bytes) -> None:
    frame = spark.createDataFrame([(bytearray(b),) for b in bodies], "value BINARY")
    frame.coalesce(1).write.format(OBJECT_SINK).mode("append").save(uri)


def test_one_row_is_one_object(spark, tmp_path: Path) -> None:
    target = tmp_path / "dir" / "report é.html"
    uri = f"file://{target}"  # Hadoop's Path takes the name as it is (no %-escapes), as before
    body = "<p>é</p>\n".encode() * 1000
    _put(spark, uri, body)
    assert target.read_bytes() == body
    _put(spark, uri, b"again")  # replaced
    assert target.read_bytes() == b"again"


def test_more_than_one_row_is_an_error(spark, tmp_path: Path) -> None:
    target = tmp_path / "x.html"
    with pytest.raises(Exception, match="more than one row"):
        _put(spark, target.as_uri(), b"a", b"b")
