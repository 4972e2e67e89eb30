"""`logberg ingest --from kafka://...` against a real Kafka broker (this home's KRaft broker,
from the pinned jars) and real Spark: the generator's manifest exactly, the same rows as a
file ingest of the same lines, replays and lost checkpoints, a killed driver, two consumers,
a restarted broker and maintenance beside a running stream, duplicates by source identity,
every kind of bad message, and the settings that fail fast.

Most runs call the job in the tests' own Spark session (`ingest_topic`, `--once`); the
ones that kill or race processes run the real `logberg` command.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from logberg.lakehouse.kafka import TopicUri
from logberg.lakehouse.schema import Table
from logberg.lakehouse.session import CATALOG
from logberg.pipeline.ingest.batch import ingest
from logberg.pipeline.ingest.config import IngestConfig
from logberg.pipeline.kafka.config import KafkaIngestConfig, ValueFormat
from logberg.pipeline.kafka.job import (
    TAG,
    KafkaBatchResult,
    ingest_topic,
    merge_new,
    replace_range,
)
from logberg_platform import kafka_broker
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port
from tests.conftest import REPO, reset_namespace, run_logberg
from tests.helpers.prometheus import pushgateway
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

# Columns that say where and when a row came from: a topic's differ from a file's.
LINEAGE = {"source_file", "line_number", "event_id", "processed_timestamp"}
SMALL = ("--num-files", "2", "--lines-per-file", "3000", "--start-date", "2025-04-01",
         "--end-date", "2025-04-02", "--malformed-rate", "0.01")  # fmt: skip
# For the runs of whole processes: few lines, several batches.
TINY = ("--lines-per-file", "800")


@pytest.fixture(scope="module")
def fresh(spark: SparkSession, lakehouse: LocalSettings) -> None:
    """An empty namespace for the module: topics of their own keep the tests apart."""
    reset_namespace(spark)


def produce(broker: str, topic: str, out: Path, seed: int, *extra: str) -> dict[str, Any]:
    """The generator to the topic; its manifest."""
    r = subprocess.run(
        [sys.executable, "-m", "generator", "--output", f"kafka://{broker}/{topic}",
         "--manifest-to", out.as_uri(), "--seed", str(seed), "--quiet", *SMALL, *extra],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    found = [
        json.loads(p.read_text()) for p in (out / "raw" / "nginx" / "_manifests").glob("*.json")
    ]
    [manifest] = [m for m in found if m["seed"] == seed]
    return manifest


def once(
    spark: SparkSession, broker: str, topic: str, checkpoint: Path, **kw: Any
) -> list[KafkaBatchResult]:
    """`ingest --from kafka://broker/topic --once` in this session; the batches it committed."""
    cfg = KafkaIngestConfig(
        TopicUri(broker, topic, "--from"), once=True, checkpoint=checkpoint.as_uri(), **kw
    )
    done: list[KafkaBatchResult] = []
    ingest_topic(spark, cfg, done.append, None)
    return done


def counts(spark: SparkSession, where: str) -> dict[str, Any]:
    """Rows per day, in all, distinct ids, and rejects, of the lines whose source_file is
    LIKE `where`."""
    logs = spark.table("nginx_logs.access_logs").where(f"source_file LIKE '{where}'")
    per_day = {
        str(r.date): r.n
        for r in logs.groupBy("date").count().withColumnRenamed("count", "n").collect()
    }
    rejects = spark.table("nginx_logs.access_logs_rejects").where(f"source_file LIKE '{where}'")
    return {
        "per_day": per_day,
        "accepted": logs.count(),
        "distinct": logs.select("event_id").distinct().count(),
        "rejected": rejects.count(),
    }


def expected(manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "per_day": {d: v["valid"] for d, v in manifest["days"].items()},
        "accepted": manifest["totals"]["valid"],
        "distinct": manifest["totals"]["valid"],
        "rejected": manifest["totals"]["malformed_total"],
    }


# -- the topic as the manifest says, and as a file ingest of the same lines -----------------


@pytest.fixture(scope="module")
def raw_topic(
    spark: SparkSession, broker: str, fresh: None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict[str, Any], Path]:
    """Seed 61 on topic raw-61, ingested once; (topic, manifest, its checkpoint)."""
    out = tmp_path_factory.mktemp("raw-61")
    manifest = produce(broker, "raw-61", out, 61)
    checkpoint = out / "checkpoint"
    batches = once(spark, broker, "raw-61", checkpoint)
    assert sum(b.messages for b in batches) == manifest["totals"]["lines"]
    return "raw-61", manifest, checkpoint


def test_once_stores_the_generators_manifest_exactly(spark: SparkSession, raw_topic: Any) -> None:
    topic, manifest, _ = raw_topic
    assert counts(spark, f"kafka://{topic}/%") == expected(manifest)
    runs = spark.sql(
        "SELECT sum(lines_read) AS lines, sum(accepted) AS ok, sum(rejected) AS bad "
        "FROM nginx_logs.ingest_runs WHERE run_id IN (SELECT run_id FROM nginx_logs.kafka_offsets "
        f"WHERE topic = '{topic}')"
    ).first()
    assert runs is not None
    totals = manifest["totals"]
    assert (runs.lines, runs.ok, runs.bad) == (
        totals["lines"],
        totals["valid"],
        totals["malformed_total"],
    )


def stable(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.drop(*LINEAGE).collect()), key=repr)


def test_a_topic_gives_the_rows_a_file_ingest_of_the_same_lines_gives(
    spark: SparkSession, raw_topic: Any, tmp_path: Path
) -> None:
    """The same seed to files: every column but the lineage is the same, row for row; the
    rejects have the same reasons and lines."""
    topic, _, _ = raw_topic
    landing = tmp_path / "landing"
    r = subprocess.run(
        [sys.executable, "-m", "generator", "--output", landing.as_uri(), "--seed", "61",
         "--quiet", *SMALL], cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    ingest(spark, IngestConfig(inputs=(landing.as_uri(),)))
    logs = spark.table("nginx_logs.access_logs")
    from_files = stable(
        logs.where(f"source_file LIKE '{landing.as_uri().replace('file://', 'file:')}%'")
    )
    from_topic = stable(logs.where(f"source_file LIKE 'kafka://{topic}/%'"))
    assert from_files and from_topic == from_files
    rejects = spark.table("nginx_logs.access_logs_rejects").select("raw_line", "reason")
    file_rej = sorted(tuple(r) for r in rejects.where("source_file LIKE 'file:%'").collect())
    topic_rej = sorted(
        tuple(r) for r in rejects.where(f"source_file LIKE 'kafka://{topic}/%'").collect()
    )
    assert file_rej and topic_rej == file_rej


def test_a_replay_or_a_lost_checkpoint_adds_nothing(
    spark: SparkSession, broker: str, raw_topic: Any, tmp_path: Path
) -> None:
    """The same checkpoint: nothing new to read. A lost checkpoint: the stream starts where
    the lakehouse ends. Both lost (the offsets of the last batch too, as after a crash
    between the rows and the offsets): the batch is read again and stores nothing twice."""
    topic, manifest, checkpoint = raw_topic
    assert once(spark, broker, topic, checkpoint) == []
    assert sum(b.messages for b in once(spark, broker, topic, tmp_path / "lost")) == 0
    spark.sql(f"DELETE FROM nginx_logs.kafka_offsets WHERE topic = '{topic}'")
    replayed = once(spark, broker, topic, tmp_path / "lost-too")
    assert sum(b.messages for b in replayed) == manifest["totals"]["lines"]
    assert sum(b.accepted for b in replayed) == 0
    assert sum(b.duplicates for b in replayed) == manifest["totals"]["valid"]
    assert counts(spark, f"kafka://{topic}/%") == expected(manifest)


def probe_table(spark: SparkSession, table: str) -> tuple[Table, str]:
    """An empty table with access_logs' key and lineage columns, partitioned by date."""
    probe = Table(table, ())
    name = f"{CATALOG}.{probe}"
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"CREATE TABLE {name} (date DATE, event_id STRING, source_file STRING, "
        "line_number BIGINT) USING iceberg PARTITIONED BY (date)"
    )
    return probe, name


def test_a_merge_of_new_offsets_reads_no_data_file_of_its_day(
    spark: SparkSession, lakehouse: LocalSettings
) -> None:
    """A batch's MERGE names its sources' line ranges on the table's side of its condition,
    so Iceberg leaves out the data files whose bounds miss them. Proof by removal: with the
    day's only data file gone from disk, the MERGE of that source's next lines commits; the
    same MERGE without the bounds has to read that file, and fails."""
    probe, name = probe_table(spark, "kafka_bounds_probe")

    def lines(lo: int, hi: int) -> DataFrame:
        return spark.createDataFrame(
            [(dt.date(2025, 4, 1), f"e-{n}", "kafka://probe/0", n) for n in range(lo, hi + 1)],
            "date DATE, event_id STRING, source_file STRING, line_number BIGINT",
        ).coalesce(1)

    lines(0, 9).writeTo(name).append()
    (old,) = [r.file_path for r in spark.table(f"{name}.files").collect()]
    Path(urllib.parse.urlparse(old).path).unlink()
    merge_new(spark, probe, lines(10, 19), ["date", "event_id"], {"kafka://probe/0": (10, 19)})
    (last,) = spark.sql(
        f"SELECT summary['added-records'] AS a, summary['deleted-data-files'] AS d "
        f"FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    assert (last.a, last.d) == ("10", None)
    with pytest.raises(Exception, match=r"(?i)FileNotFound|does not exist|not found"):
        merge_new(spark, probe, lines(20, 29), ["date", "event_id"])
    spark.sql(f"DROP TABLE {name}")  # not PURGE: a file of it is gone already


def test_new_offsets_are_added_a_replayed_range_replaces_and_a_cut_file_is_refused(
    spark: SparkSession,
) -> None:
    """`replace_range`, a raw batch's write: the rows of new offsets are added (no data
    file deleted), a replayed range's files are replaced by its rows, and a
    range that cuts a data file (one compacted from several batches) is refused, for the
    MERGE."""
    probe, name = probe_table(spark, "kafka_range_probe")

    def lines(p: int, lo: int, hi: int) -> DataFrame:
        src = f"kafka://probe/{p}"
        return spark.createDataFrame(
            [(dt.date(2025, 4, 1), f"{p}-{n}", src, n) for n in range(lo, hi + 1)],
            "date DATE, event_id STRING, source_file STRING, line_number BIGINT",
        ).coalesce(1)

    def last() -> tuple[str | None, ...]:
        (r,) = spark.sql(
            f"SELECT summary['added-records'] AS a, summary['deleted-records'] AS d, "
            f"summary['{TAG}'] AS tag FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).collect()
        return (r.a, r.d, r.tag)

    def held() -> list[tuple[str, int]]:
        rows = spark.table(name).groupBy("source_file").count().orderBy("source_file")
        return [(r.source_file, int(r["count"])) for r in rows.collect()]

    lines(0, 0, 9).writeTo(name).append()
    lines(1, 0, 9).writeTo(name).append()
    assert replace_range(spark, probe, lines(0, 10, 19), {"kafka://probe/0": (10, 19)}, "new")
    assert last() == ("10", None, "new")
    assert replace_range(spark, probe, lines(0, 10, 19), {"kafka://probe/0": (10, 19)}, "again")
    assert last() == ("10", "10", "again")
    assert held() == [("kafka://probe/0", 20), ("kafka://probe/1", 10)]
    lines(0, 20, 29).unionByName(lines(1, 20, 29)).coalesce(1).writeTo(name).append()
    cut = {"kafka://probe/0": (25, 34)}
    assert not replace_range(spark, probe, lines(0, 25, 34), cut, "cut")
    assert held() == [("kafka://probe/0", 30), ("kafka://probe/1", 20)]
    spark.sql(f"DROP TABLE {name} PURGE")


# -- source identity: duplicates by identity go, identical requests stay -----------------


def producer(broker: str) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": broker, "log_level": 3, "message.max.bytes": 16 << 20})


def make_topic(broker: str, topic: str, partitions: int = 1) -> None:
    from logberg.lakehouse.kafka import create_topic

    create_topic(TopicUri(broker, topic, "test"), partitions)


LINE = '10.1.2.3 - - [02/Apr/2025:10:00:00 +0000] "GET /same HTTP/1.1" 200 5 "-" "curl/8.5"'


def test_a_line_sent_twice_is_stored_once_and_identical_requests_twice(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    """A shipper's replay (the same envelope: host, file, offset) is one row, in one batch
    and across batches; two requests with the same text at two offsets are two rows."""
    make_topic(broker, "env-dup")
    p = producer(broker)
    first = json.dumps({"log": LINE, "host": "web-1", "file": "/a.log", "offset": 1})
    second = json.dumps({"log": LINE, "host": "web-1", "file": "/a.log", "offset": 2})
    for value in (first, first, second):
        p.produce("env-dup", value.encode())
    p.flush(30)
    cp = tmp_path / "cp"
    (batch,) = once(spark, broker, "env-dup", cp, value=ValueFormat("log"))
    assert (batch.messages, batch.accepted, batch.duplicates) == (3, 2, 1)
    p.produce("env-dup", first.encode())  # replayed later, by an at-least-once shipper
    p.flush(30)
    (again,) = once(spark, broker, "env-dup", cp, value=ValueFormat("log"))
    assert (again.accepted, again.duplicates) == (0, 1)
    rows = spark.table("nginx_logs.access_logs").where("source_file = 'web-1:/a.log'")
    assert sorted(r.line_number for r in rows.collect()) == [1, 2]


def test_every_bad_message_is_a_reject_with_its_bytes_and_the_stream_goes_on(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    make_topic(broker, "bad")
    big = b"x" * (10 << 20)
    p = producer(broker)
    sent = [
        (b"10.0.0.1 \xff\xfe GET", "not_utf8"),
        (b"", "empty"),
        (big, "too_long"),
        (None, "tombstone"),
        (b"garbage that is not a line", "unparseable"),
    ]
    for value, _ in sent:
        p.produce("bad", value, b"k")
    p.produce("bad", LINE.encode())  # a good line after them all
    p.flush(60)
    (batch,) = once(spark, broker, "bad", tmp_path / "cp")
    assert (batch.messages, batch.accepted, batch.rejected) == (6, 1, 5)
    got = {
        r.line_number: r
        for r in spark.table("nginx_logs.access_logs_rejects")
        .where("source_file = 'kafka://bad/0'")
        .collect()
    }
    for offset, (value, reason) in enumerate(sent):
        assert got[offset].reason == reason, (offset, got[offset].reason)
        if reason in ("not_utf8", "empty", "too_long"):
            assert bytes(got[offset].raw_bytes) == value, reason
    assert spark.table("nginx_logs.access_logs").where("source_file = 'kafka://bad/0'").count() == 1
    # an envelope without the line's field
    make_topic(broker, "bad-env")
    p.produce("bad-env", b'{"message": "not in log"}')
    p.flush(30)
    (env,) = once(spark, broker, "bad-env", tmp_path / "cp-env", value=ValueFormat("log"))
    assert env.rejected == 1
    [row] = (
        spark.table("nginx_logs.access_logs_rejects")
        .where("source_file = 'kafka://bad-env/0'")
        .collect()
    )
    assert row.reason == "no_field" and bytes(row.raw_bytes) == b'{"message": "not in log"}'


def transactions(broker: str, topic: str, chunks: list[list[bytes | None]]) -> dict[int, Any]:
    """Each chunk in a transaction of its own (its commit marker takes an offset: the
    partition's offsets have a gap after every chunk); offset -> value sent."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker, "transactional.id": f"t-{topic}", "log_level": 3})
    p.init_transactions(60)
    sent: dict[int, Any] = {}

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        sent[int(message.offset())] = message.value()

    for chunk in chunks:
        p.begin_transaction()
        for value in chunk:
            p.produce(topic, value, b"k", on_delivery=delivered)
        p.commit_transaction(60)
    return sent


def test_a_partition_read_in_pieces_gives_every_message_once_with_exact_counts(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    """KafkaLines splits a one-partition batch into pieces, one task each (min_partitions),
    each piece read up to its own end and never past it, over offsets with gaps (commit
    markers) at and within the pieces' ends: in every number of pieces each message is a
    row or a reject exactly once, and the partition's counts are exact, as in one piece.
    A read retried in other pieces (the same sink) counts the partition once. Ingested in
    pieces, the batch stores each message once; replayed in other pieces, it adds nothing."""
    from logberg.lakehouse.kafka import end_offsets
    from logberg.pipeline.ingest.reader import RejectSink
    from logberg.pipeline.kafka.reader import read_good_rows
    from logberg.pipeline.parse import access_columns

    topic = "split-1"
    make_topic(broker, topic)

    def value(i: int) -> bytes | None:
        bad = {3: b"garbage that is not a line", 5: b"", 7: None, 9: b"10.0.0.1 \xff GET"}
        return bad[i % 10] if i % 10 in bad else LINE.replace("/same", f"/n{i}").encode()

    sizes = [5, 3, 7, 1, 6, 4, 8, 6]  # 40 messages, 8 markers: offsets 0-47
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    sent = transactions(
        broker,
        topic,
        [[value(s + i) for i in range(n)] for s, n in zip(starts, sizes, strict=True)],
    )
    until = end_offsets(TopicUri(broker, topic, "test"))[0]
    assert len(sent) == 40 and until == 48 and sorted(sent)[-1] < until - 1  # ends in a gap
    reasons = {b"garbage that is not a line": "unparseable", b"": "empty", None: "tombstone"}
    want_bad = {
        o: reasons.get(v, "not_utf8") for o, v in sent.items() if v in reasons or b"\xff" in v
    }
    want_good = set(sent) - set(want_bad)
    source = f"kafka://{topic}/0"
    nbytes = sum(len(v or b"") for v in sent.values())

    stamp = ("processed_timestamp", dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc))
    split = KafkaIngestConfig(TopicUri(broker, topic, "test"), min_split_messages=1)
    for pieces in (1, 2, 3, 4, 5, 7):
        sink = RejectSink(spark)
        rows = read_good_rows(spark, split, {0: (0, until)}, sink, access_columns(), stamp, pieces)
        assert rows.rdd.getNumPartitions() == pieces
        got = [r.line_number for r in rows.select("line_number").collect()]
        assert sorted(got) == sorted(want_good), pieces  # once each: no piece read past its end
        assert sink.counts() == {source: (40, len(want_bad), nbytes)}, pieces
        kept = sink.lines()
        assert kept is not None and kept[1] == len(want_bad)
        assert {r.line_number: r.reject_reason for r in kept[0].collect()} == want_bad, pieces
    # The same sink read in 4 pieces, then in 3: the second plan's pieces, counted once.
    sink = RejectSink(spark)
    for pieces in (4, 3):
        read_good_rows(spark, split, {0: (0, until)}, sink, access_columns(), stamp, pieces).count()
    assert sink.counts() == {source: (40, len(want_bad), nbytes)}
    sink.lines()
    # A small batch stays one piece (KafkaLines' own least piece: 20,000 messages).
    whole = KafkaIngestConfig(TopicUri(broker, topic, "test"))
    sink = RejectSink(spark)
    small = read_good_rows(spark, whole, {0: (0, until)}, sink, access_columns(), stamp, 4)
    assert small.rdd.getNumPartitions() == 1
    sink.lines()

    (batch,) = once(spark, broker, topic, tmp_path / "cp", min_partitions=4, min_split_messages=1)
    assert (batch.messages, batch.accepted, batch.rejected) == (40, len(want_good), len(want_bad))
    assert batch.offsets == {0: (0, until)}
    held = spark.table("nginx_logs.access_logs").where(f"source_file = '{source}'")
    assert sorted(r.line_number for r in held.select("line_number").collect()) == sorted(want_good)
    rejects = spark.table("nginx_logs.access_logs_rejects").where(f"source_file = '{source}'")
    assert {r.line_number: r.reason for r in rejects.collect()} == want_bad
    spark.sql(f"DELETE FROM nginx_logs.kafka_offsets WHERE topic = '{topic}'")
    (again,) = once(spark, broker, topic, tmp_path / "cp-2", min_partitions=3, min_split_messages=1)
    assert (again.messages, again.accepted, again.duplicates) == (40, 0, len(want_good))
    assert held.count() == len(want_good) and rejects.count() == len(want_bad)


# -- processes: a killed driver, two consumers, a restarted broker beside maintenance ------


def stored(spark: SparkSession, broker: str, topic: str) -> bool:
    """Every message the topic holds is in the lakehouse: its batches' offsets, written
    after their rows and rejects, reach the end of every partition."""
    from logberg.lakehouse.kafka import end_offsets
    from logberg.pipeline.kafka.job import lakehouse_offsets

    if not spark.catalog.tableExists("nginx_logs.kafka_offsets"):
        return False  # the stream has not made its tables yet
    ends = end_offsets(TopicUri(broker, topic, "test"))
    return any(ends.values()) and lakehouse_offsets(spark, topic) == {
        p: o for p, o in ends.items() if o
    }


def command(broker: str, topic: str, cp: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "logberg.cli", "ingest", "--from", f"kafka://{broker}/{topic}",
            "--checkpoint", cp.as_uri(), "--analytics-every", "0", *extra]  # fmt: skip


def test_a_killed_driver_resumes_where_the_lakehouse_ends(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    manifest = produce(broker, "killed", tmp_path, 71, *TINY)
    cp = tmp_path / "cp"
    proc = subprocess.Popen(
        command(broker, "killed", cp, "--once", "--max-messages-per-trigger", "400"),
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("kafka batch 0 "):  # a batch committed, others to come
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    r = run_logberg(command(broker, "killed", cp, "--once")[3:])
    assert r.returncode == 0, r.stderr[-3000:]
    assert counts(spark, "kafka://killed/%") == expected(manifest)


def test_two_consumers_of_one_topic_keep_the_lakehouse_exact(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    from tests.conftest import run_side_by_side

    manifest = produce(broker, "twins", tmp_path, 72)
    run_side_by_side(
        {
            n: command(
                broker,
                "twins",
                tmp_path / f"cp-{n}",
                "--once",
                "--max-messages-per-trigger",
                "2000",
            )
            for n in ("a", "b")
        },
        tmp_path / "logs",
    )
    assert counts(spark, "kafka://twins/%") == expected(manifest)


def test_a_restarted_broker_and_maintenance_beside_the_stream_lose_nothing(
    spark: SparkSession, broker: str, lakehouse: LocalSettings, fresh: None, tmp_path: Path
) -> None:
    """A running stream (pushing its lag): the broker stops and starts again between two
    producers' runs, and `logberg maintain` compacts access_logs meanwhile; the stream
    stores both runs exactly, and its lag gauge reaches the Pushgateway."""
    make_topic(broker, "restart", 2)
    with pushgateway(tmp_path) as gateway:
        env = {**os.environ, "LOGBERG_PUSHGATEWAY": gateway}
        log = (tmp_path / "stream.log").open("w")
        stream = subprocess.Popen(
            command(broker, "restart", tmp_path / "cp", "--trigger-seconds", "1"),
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            first = produce(broker, "restart", tmp_path, 73, *TINY)
            caught_up = lambda: stored(spark, broker, "restart")  # noqa: E731
            eventually(
                "the first run in the lakehouse", caught_up, 300, 2,
                lambda: (tmp_path / "stream.log").read_text()[-3000:],
            )  # fmt: skip
            kafka_broker.stop(lakehouse)
            kafka_broker.start(lakehouse)
            maintain = run_logberg(["maintain", "--table", "access_logs"])
            assert maintain.returncode == 0, maintain.stderr[-3000:]
            second = produce(broker, "restart", tmp_path, 74, *TINY)
            want = first["totals"]["valid"] + second["totals"]["valid"]
            eventually(
                "the second run in the lakehouse", caught_up, 300, 2,
                lambda: (tmp_path / "stream.log").read_text()[-3000:],
            )  # fmt: skip
            with urllib.request.urlopen(f"{gateway}/metrics", timeout=10) as resp:
                pushed = resp.read().decode()
            assert "logberg_kafka_consumer_lag{" in pushed and 'topic="restart"' in pushed
        finally:
            stream.send_signal(signal.SIGKILL)
            stream.wait()
    got = counts(spark, "kafka://restart/%")
    assert got["accepted"] == got["distinct"] == want
    assert (
        got["rejected"] == first["totals"]["malformed_total"] + second["totals"]["malformed_total"]
    )


# -- settings that fail fast ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "value", "says"),
    [
        ("kafka://127.0.0.1:1/logs", "raw", "--from 127.0.0.1:1: the Kafka broker does not answer"),
        ("kafka://{broker}/no-such-topic", "raw", "the broker has no topic 'no-such-topic'"),
        ("kafka://{broker}/raw-61", "xml", "--value 'xml': expected raw or json:FIELD"),
        ("kafka://{broker}/bad name", "raw", "is not a valid Kafka topic name"),
    ],
)
def test_a_wrong_broker_topic_or_value_format_is_named(
    broker: str, source: str, value: str, says: str
) -> None:
    r = run_logberg(["ingest", "--from", source.format(broker=broker), "--once", "--value", value])
    assert r.returncode == 2, r.stderr[-2000:]
    assert says in r.stderr
    assert "spark: in-process" not in r.stderr  # before any Spark started


def test_the_dry_run_says_how_far_behind_the_lakehouse_is(
    spark: SparkSession, broker: str, raw_topic: Any
) -> None:
    make_topic(broker, "behind", 1)
    p = producer(broker)
    for _ in range(7):
        p.produce("behind", LINE.encode())
    p.flush(30)
    r = run_logberg(["ingest", "--from", f"kafka://{broker}/behind", "--dry-run"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "partition 0: lakehouse at 0, topic at 7, 7 message(s) behind" in r.stdout


def position(broker: str, topic: str, checkpoint: Path) -> dict[str, Any]:
    """`python3 -m logberg.pipeline.kafka.position`, what `logberg k8s wait stream` runs in
    a stream's driver pod: no Spark, the checkpoint and the broker alone."""
    r = subprocess.run(
        [sys.executable, "-m", "logberg.pipeline.kafka.position", f"kafka://{broker}/{topic}",
         checkpoint.as_uri()],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(json.loads(r.stdout))


def test_a_streams_position_comes_from_its_checkpoint_and_the_broker(
    broker: str, raw_topic: Any, tmp_path: Path
) -> None:
    topic, manifest, checkpoint = raw_topic
    got = position(broker, topic, checkpoint)
    assert isinstance(got["batch"], int) and got["behind"] == 0, got
    assert got["at"] == got["ends"], got
    assert sum(got["ends"].values()) == manifest["totals"]["lines"], got
    # A topic no stream has read yet: no batch, all of it behind.
    make_topic(broker, "unread", 2)
    p = producer(broker)
    for i in range(5):
        p.produce("unread", LINE.encode(), partition=i % 2)
    p.flush(30)
    unread = position(broker, "unread", tmp_path / "no-checkpoint")
    assert unread == {"batch": None, "at": {}, "ends": {"0": 3, "1": 2}, "behind": 5}, unread


def test_wait_ready_waits_for_the_brokers_and_names_the_setting(broker: str) -> None:
    """What a Kafka client's init container runs in the charts."""
    wait = ["wait-ready", "--no-metastore", "--kafka", "--timeout", "4", "--interval", "1"]
    ok = run_logberg(wait, {"LOGBERG_KAFKA_BOOTSTRAP": broker})
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert f"Kafka {broker}" in ok.stdout, ok.stdout
    gone = run_logberg(wait, {"LOGBERG_KAFKA_BOOTSTRAP": "127.0.0.1:1"})
    assert gone.returncode != 0
    said = gone.stderr
    assert "not ready after" in said and "LOGBERG_KAFKA_BOOTSTRAP 127.0.0.1:1" in said, said


def test_doctor_checks_the_broker_when_one_is_configured(broker: str) -> None:
    r = run_logberg(["doctor"])
    assert "ok      kafka" in r.stdout and f"the broker at {broker} answers" in r.stdout, r.stdout
    wrong = run_logberg(["doctor"], {"LOGBERG_KAFKA_BOOTSTRAP": "127.0.0.1:1"})
    assert wrong.returncode == 1
    assert (
        "the Kafka broker at 127.0.0.1:1 (LOGBERG_KAFKA_BOOTSTRAP) does not answer" in wrong.stdout
    )


def test_a_home_whose_cluster_id_starts_with_a_dash_formats_its_storage(
    lakehouse: LocalSettings, tmp_path: Path
) -> None:
    # Homes made before ids were drawn without a leading '-' may hold one (1 in 64 did).
    home = dataclasses.replace(lakehouse, home=tmp_path)
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "cluster.id").write_text("-ecbjm7rTGKzRdzhRQxDKw\n")
    conf = kafka_broker.write_conf(home, free_port(), free_port())
    assert kafka_broker.format_storage(home, conf)
    meta = (tmp_path / "kafka" / "data" / "meta.properties").read_text()
    assert "cluster.id=-ecbjm7rTGKzRdzhRQxDKw" in meta.splitlines()


def test_a_batchs_ranges_from_the_offset_log_are_what_sparks_own_batch_holds(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    """The raw path reads a batch's ranges itself (`dev.logberg.KafkaLines`), taking them
    from the checkpoint's offset log: for every batch of a stream, the first, the later
    ones and one after a restart, they are exactly the offsets Spark's Kafka source gives."""
    from pyspark.sql import functions as F

    from logberg.pipeline.kafka import offset_log

    produce(broker, "ranges-67", tmp_path / "out", 67, "--partitions", "3")
    checkpoint = (tmp_path / "checkpoint").as_uri()
    seen: list[tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]] = []

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        held = batch.groupBy("partition").agg(
            F.min("offset").alias("lo"), F.max("offset").alias("hi")
        )
        spark_says = {int(r.partition): (int(r.lo), int(r.hi) + 1) for r in held.collect()}
        ranges = offset_log.batch_ranges(spark, checkpoint, batch_id, "ranges-67")
        seen.append((spark_says, ranges))

    for limit in (2500, 1000):  # a second query on the same checkpoint: Spark's restart
        stream = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker)
            .option("subscribe", "ranges-67")
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(limit))
            .load()
            .writeStream.foreachBatch(on_batch)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        stream.awaitTermination()
        if limit == 2500:
            produce(broker, "ranges-67", tmp_path / "more", 68, "--partitions", "3")
    assert len(seen) > 3
    for spark_says, log_says in seen:
        assert log_says == spark_says
