"""A log shipper's path into the lakehouse, with a Kafka client nobody here wrote: the topic
made by `logberg kafka topics create`, an nginx access log shipped line by line by Debian's
kcat (librdkafka), then `logberg ingest --from kafka://... --once`: every line once, in
access_logs or in the rejects with its reason, and a second run adds nothing. Also the
topics commands themselves (create, its refusals, list, describe with the lakehouse's
committed offsets) and `logberg local up --kafka --topic`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from logberg.lakehouse.kafka import TopicUri
from logberg.pipeline.kafka.config import KafkaIngestConfig
from logberg.pipeline.kafka.job import KafkaBatchResult, ingest_topic
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port
from tests.conftest import reset_namespace, run_logberg

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

LINES = 300
MALFORMED_EVERY = 25  # lines 0, 25, 50, ... are not nginx lines


@pytest.fixture(scope="module")
def fresh(spark: SparkSession, lakehouse: LocalSettings) -> None:
    """An empty namespace for the module: no kafka_offsets table until an ingest makes it."""
    reset_namespace(spark)


def topics(broker: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`logberg kafka topics ARGS --bootstrap BROKER`, the real command."""
    return run_logberg(["kafka", "topics", *args, "--bootstrap", broker], timeout=300)


def described(broker: str, topic: str, *extra: str) -> tuple[list[dict[str, Any]], str]:
    """`topics describe` as rows (jsonl), and its notes (stderr)."""
    r = topics(broker, "describe", topic, "--format", "jsonl", *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines()], r.stderr


def access_log(path: Path) -> tuple[set[str], set[str]]:
    """An nginx access log of LINES lines, some not nginx lines; (good paths, bad lines)."""
    good, bad, lines = set(), set(), []
    for i in range(LINES):
        if i % MALFORMED_EVERY == 0:
            line = f"not an access log line {i}"
            bad.add(line)
        else:
            line = (
                f"10.0.{i // 250}.{i % 250} - - [02/Apr/2025:10:{i // 60:02d}:{i % 60:02d} +0000] "
                f'"GET /page/{i} HTTP/1.1" 200 {100 + i} "-" "curl/8.5.0"'
            )
            good.add(f"/page/{i}")
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return good, bad


def kcat(broker: str, topic: str, path: Path) -> None:
    """Debian's kcat ships the file, one message a line."""
    exe = shutil.which("kcat")
    assert exe, "kcat is not installed (Debian package kcat; .ci/run installs it)"
    r = subprocess.run(
        [exe, "-P", "-b", broker, "-t", topic, "-l", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


def once(spark: SparkSession, broker: str, topic: str, checkpoint: Path) -> list[KafkaBatchResult]:
    """`ingest --from kafka://broker/topic --once` in this session; its batches."""
    cfg = KafkaIngestConfig(
        TopicUri(broker, topic, "--from"), once=True, checkpoint=checkpoint.as_uri()
    )
    done: list[KafkaBatchResult] = []
    ingest_topic(spark, cfg, done.append, None)
    return done


def test_kcat_shipped_lines_land_once_and_a_rerun_adds_nothing(
    spark: SparkSession, broker: str, fresh: None, tmp_path: Path
) -> None:
    made = topics(broker, "create", "nginx-kcat", "--partitions", "2")
    assert made.returncode == 0, made.stderr[-3000:]
    assert "topic nginx-kcat made" in made.stdout
    good, bad = access_log(tmp_path / "access.log")
    kcat(broker, "nginx-kcat", tmp_path / "access.log")

    # Before any ingest: the end offsets, and no kafka_offsets table to read (no Spark).
    rows, notes = described(broker, "nginx-kcat")
    assert [r["partition"] for r in rows] == [0, 1]
    assert sum(r["end_offset"] for r in rows) == LINES
    assert "no kafka_offsets table" in notes and "end offsets only" in notes
    assert "committed" not in rows[0]

    cp = tmp_path / "cp"
    r = run_logberg(
        ["ingest", "--from", f"kafka://{broker}/nginx-kcat", "--once",
         "--checkpoint", cp.as_uri(), "--analytics-every", "0"]
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    logs = spark.table("nginx_logs.access_logs").where("source_file LIKE 'kafka://nginx-kcat/%'")
    paths = [row.url_path for row in logs.select("url_path").collect()]
    assert len(paths) == len(good) and set(paths) == good
    rejects = spark.table("nginx_logs.access_logs_rejects").where(
        "source_file LIKE 'kafka://nginx-kcat/%'"
    )
    got = [(row.raw_line, row.reason) for row in rejects.collect()]
    assert sorted(got) == sorted((line, "unparseable") for line in bad)

    assert once(spark, broker, "nginx-kcat", cp) == []  # the same checkpoint: nothing new
    assert once(spark, broker, "nginx-kcat", tmp_path / "lost-cp") == []  # a lost one too
    assert logs.count() == len(good) and rejects.count() == len(bad)

    rows, _ = described(broker, "nginx-kcat")
    assert all(r["committed"] == r["end_offset"] and r["lag"] == 0 for r in rows), rows
    assert sum(r["committed"] for r in rows) == LINES
    rows, notes = described(broker, "nginx-kcat", "--no-lakehouse")
    assert "committed" not in rows[0] and "--no-lakehouse" in notes


def test_create_is_idempotent_and_names_what_differs(broker: str) -> None:
    first = topics(
        broker, "create", "t-same", "--partitions", "3", "--config", "retention.ms=3600000"
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "made" in first.stdout and "3 partition(s), replication factor 1" in first.stdout
    again = topics(
        broker, "create", "t-same", "--partitions", "3", "--config", "retention.ms=3600000"
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "exists" in again.stdout and "as asked" in again.stdout
    other = topics(
        broker, "create", "t-same", "--partitions", "2", "--config", "retention.ms=60000"
    )
    assert other.returncode == 2
    assert "3 partition(s), not 2" in other.stderr
    assert "retention.ms=3600000, not 60000" in other.stderr
    assert "Traceback" not in other.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["bad name"], "'bad name': not a topic name Kafka takes"),
        ([".."], "'..': not a topic name Kafka takes"),
        (["t-zero", "--partitions", "0"], "--partitions 0: a topic needs at least one"),
        (["t-rf", "--replication-factor", "2"], "--replication-factor 2: the cluster at"),
        (["t-conf", "--config", "retention.ms"], "--config 'retention.ms': expected KEY=VALUE"),
    ],
)
def test_a_topic_kafka_would_refuse_is_an_error_before_any_request(
    broker: str, args: list[str], says: str
) -> None:
    r = topics(broker, "create", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert says in r.stderr
    listed = topics(broker, "list", "--format", "jsonl")
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert args[0] not in {json.loads(line)["topic"] for line in listed.stdout.splitlines()}


def test_list_shows_the_topics_and_not_kafkas_own(broker: str) -> None:
    assert topics(broker, "create", "t-listed", "--partitions", "2").returncode == 0
    r = topics(broker, "list", "--format", "jsonl")
    assert r.returncode == 0, r.stderr[-3000:]
    found = {row["topic"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert found["t-listed"] == {"topic": "t-listed", "partitions": 2, "replication_factor": 1}
    assert not [name for name in found if name.startswith("__")]


def test_describe_without_a_metastore_says_so_and_shows_the_end_offsets(broker: str) -> None:
    assert topics(broker, "create", "t-alone").returncode == 0
    r = run_logberg(
        ["kafka", "topics", "describe", "t-alone", "--bootstrap", broker, "--format", "jsonl"],
        env={"LOGBERG_METASTORE_URI": f"thrift://127.0.0.1:{free_port()}"},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert [json.loads(line) for line in r.stdout.splitlines()] == [
        {"partition": 0, "leader": 1, "replicas": "1", "in_sync": "1", "end_offset": 0}
    ]
    assert "the lakehouse's metastore does not answer" in r.stderr
    assert "end offsets only" in r.stderr


def test_describe_names_a_topic_the_broker_does_not_have(broker: str) -> None:
    r = topics(broker, "describe", "t-nowhere")
    assert r.returncode == 2
    assert "has no topic 't-nowhere'" in r.stderr


def test_local_up_makes_the_topics_it_is_given(broker: str) -> None:
    """The broker runs (this module's, on LOGBERG_KAFKA_PORT); `up` makes the topics on it,
    and a second `up` finds them as asked."""
    argv = ["local", "up", "--no-connect", "--kafka", "--topic", "up-two:2", "--topic", "up-one"]
    for word in ("made", "exists"):
        r = run_logberg(argv, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert f"up-two  (2 partition(s), {word})" in r.stdout
        assert f"up-one  (1 partition(s), {word})" in r.stdout
    wrong = run_logberg(["local", "up", "--no-connect", "--kafka", "--topic", "up-two:3"])
    assert wrong.returncode == 2 and "2 partition(s), not 3" in wrong.stderr


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["local", "up", "--topic", "t"], "--topic: makes a topic on the local Kafka broker"),
        (["local", "up", "--kafka", "--topic", "t:x"], "--topic 't:x': expected NAME[:PARTITIONS]"),
        (["local", "up", "--kafka", "--topic", "t:0"], "--topic 't:0': a topic needs at least"),
    ],
)
def test_local_up_topic_is_checked_before_anything_starts(argv: list[str], says: str) -> None:
    r = run_logberg(argv, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert says in r.stderr
    assert "metastore" not in r.stdout  # nothing started
