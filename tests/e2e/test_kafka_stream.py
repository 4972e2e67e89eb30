"""Kafka on the local cluster: the chart's Kafka examples as a user copies them (the
generator Job producing to a topic of the dev broker, the streaming SparkApplication that
reads it, restartPolicy Always), on a topic of this file's own.

What the stream stores equals the generator's manifest, line for line; its driver pod
deleted mid-stream, the operator starts another, and nothing is lost or doubled; the
broker's pod deleted mid-stream, the StatefulSet starts another on the same log (a PVC on
kind, the node's directory here) and the stream goes on, still exact; the stream stopped
while the producer goes on, the chart's scheduled lag probe (`ingest --from ... --dry-run`)
pushes the lag, and Prometheus's LogbergKafkaLagGrowing expression returns the topic. The rows
of the topic are deleted at the end: the other files count the landing's lines only, so in
a whole run this file goes after them (conftest's ORDER)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from logberg_platform.k8s.apps import DRIVER_CONTAINER, POSITION
from tests.e2e.framework import BUCKET, EXAMPLES, Deployed, truth, wait_for
from tests.e2e.test_metrics import alert_expr
from tests.helpers.prometheus import prometheus
from tests.helpers.waiting import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KAFKA_EXAMPLES = EXAMPLES / "kafka"
# The stream's restart interval here (the example's, from the chart's values: 30 s).
RESTART_SECONDS = 5


def manifest_prefix(topic: str) -> str:
    return f"kafka-manifests/{topic}"


def generator_job(name: str, topic: str, *args: str) -> dict[str, Any]:
    """The generator example, producing `args`' lines to `topic` (its manifest beside the
    topic's others)."""
    job = yaml.safe_load((KAFKA_EXAMPLES / "generate.yaml").read_text())
    job["metadata"]["name"] = name
    [c] = job["spec"]["template"]["spec"]["containers"]
    command = list(c["command"])
    command[command.index("--output") + 1] = f"kafka:///{topic}"
    command[command.index("--manifest-to") + 1] = f"s3://{BUCKET}/{manifest_prefix(topic)}"
    c["command"], c["args"] = command, list(args)
    return dict(job)


def stream_app(name: str, topic: str) -> dict[str, Any]:
    """The stream example, reading `topic` (no analytics after each batch: the file counts
    rows), restarted after RESTART_SECONDS."""
    app = yaml.safe_load((KAFKA_EXAMPLES / "streaming.yaml").read_text())
    app["metadata"]["name"] = name
    spec = app["spec"]
    assert spec["arguments"][:2] == ["ingest", "--from"], spec["arguments"]
    spec["arguments"] = ["ingest", "--from", f"kafka:///{topic}", "--analytics-every", "0"]
    assert spec["restartPolicy"]["type"] == "Always", spec["restartPolicy"]
    for key in ("onFailureRetryInterval", "onSubmissionFailureRetryInterval"):
        spec["restartPolicy"][key] = RESTART_SECONDS
    return dict(app)


class Stream:
    def __init__(self, d: Deployed, topic: str) -> None:
        self.d, self.topic = d, topic
        self.app = f"kafka-stream-{topic}"[:52]
        self.jobs: list[str] = []

    def produce(self, seed: int, *args: str) -> dict[str, Any]:
        """One generator Job to the topic, until complete; its manifest."""
        name = f"kafka-gen-{seed}-{self.topic}"[:63]
        job = generator_job(name, self.topic, *args, "--seed", str(seed))
        self.d.k("apply", "-f", "-", stdin=json.dumps(job))
        self.jobs.append(name)
        self.d.logberg_k8s("wait", "job", name, "--timeout=600")
        [found] = [m for m in self.manifests() if m["seed"] == seed]
        return found

    def manifests(self) -> list[dict[str, Any]]:
        s3 = self.d.s3()
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=manifest_prefix(self.topic) + "/")
        return [
            json.loads(s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read())
            for o in listed.get("Contents", [])
            if o["Key"].endswith(".json")
        ]

    def start(self) -> None:
        self.d.k("apply", "-f", "-", stdin=json.dumps(stream_app(self.app, self.topic)))

    def caught_up(self) -> str:
        return self.d.logberg_k8s("wait", "stream", self.app, "--timeout=900")

    def counts(self) -> dict[str, Any]:
        where = f"source_file LIKE 'kafka://{self.topic}/%'"
        rows = self.d.sql(
            f"SELECT 'day', CAST(date AS STRING), COUNT(*) FROM nginx_logs.access_logs "
            f"WHERE {where} GROUP BY date "
            f"UNION ALL SELECT 'rejects', '', COUNT(*) FROM nginx_logs.access_logs_rejects "
            f"WHERE {where} "
            f"UNION ALL SELECT 'dup_events', '', COUNT(*) - COUNT(DISTINCT event_id) "
            f"FROM nginx_logs.access_logs WHERE {where}"
        )
        return {
            "days": {r[1]: int(r[2]) for r in rows if r[0] == "day"},
            "rejected": next(int(r[2]) for r in rows if r[0] == "rejects"),
            "duplicates": next(int(r[2]) for r in rows if r[0] == "dup_events"),
        }

    def assert_exact(self) -> dict[str, Any]:
        """Every line the generator Jobs produced is in access_logs or the rejects, once."""
        want, got = truth(self.manifests()), self.counts()
        assert got["duplicates"] == 0, got
        assert got["days"] == want["days"], (got, want)
        assert got["rejected"] == want["rejected"], (got, want)
        return want

    def position(self) -> dict[str, Any]:
        """Where the stream is and where the topic ends (partition -> offset), as `logberg
        k8s wait stream` reads it inside the driver pod; polled while the driver or the
        broker is not answering."""
        found: list[dict[str, Any]] = []

        def read() -> bool:
            out = self.d.k(
                "exec", self.driver(), "-c", DRIVER_CONTAINER, "--",
                "python3", "-m", POSITION, f"kafka:///{self.topic}", check=False,
            )  # fmt: skip
            lines = out.strip().splitlines()
            if lines and lines[-1].startswith("{"):
                found[:] = [json.loads(lines[-1])]
            return bool(found)

        wait_for(f"{self.app}'s position", read, timeout=300, every=5)
        return found[0]

    def driver(self) -> str:
        status = self.d.app_status(self.app)
        return str((status.get("driverInfo") or {}).get("podName") or "")

    def stop(self) -> None:
        self.d.delete_app(self.app)
        for job in self.jobs:
            self.d.k("delete", "job", job, "--ignore-not-found", "--cascade=foreground")
        where = f"source_file LIKE 'kafka://{self.topic}/%'"
        for table in ("access_logs", "access_logs_rejects"):
            self.d.sql(f"DELETE FROM nginx_logs.{table} WHERE {where}")
        s3 = self.d.s3()
        for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=manifest_prefix(self.topic) + "/").get(
            "Contents", []
        ):
            s3.delete_object(Bucket=BUCKET, Key=o["Key"])


@pytest.fixture(scope="module")
def stream(deployed: Deployed) -> Iterator[Stream]:
    s = Stream(deployed, f"lbk-{secrets.token_hex(3)}")
    try:
        yield s
    finally:
        s.stop()


def test_a_topic_streams_into_access_logs_equal_to_its_manifest(stream: Stream) -> None:
    made = stream.produce(
        301, "--num-files", "2", "--lines-per-file", "6000", "--start-date", "2025-02-03",
        "--end-date", "2025-02-04", "--malformed-rate", "0.005",
    )  # fmt: skip
    assert made["totals"]["malformed_total"] > 0, made["totals"]
    stream.start()
    out = stream.caught_up()
    assert "caught up" in out, out
    want = stream.assert_exact()
    assert want["valid"] == sum(made["days"][d]["valid"] for d in made["days"])
    # The stream's driver and executors are the Kafka clients the broker's policy admits.
    pods = stream.d.obj("pods", "-l", f"sparkoperator.k8s.io/app-name={stream.app}")["items"]
    roles = {p["metadata"]["labels"].get("spark-role") for p in pods}
    assert roles == {"driver", "executor"}, roles
    for p in pods:
        assert p["metadata"]["labels"].get("logberg.io/kafka-client") == "true", p["metadata"]


def test_a_driver_deleted_mid_stream_is_restarted_and_nothing_is_lost_or_doubled(
    stream: Stream,
) -> None:
    status = stream.d.app_status(stream.app)
    driver, submission = stream.driver(), status.get("submissionID")
    attempts = int(status.get("executionAttempts") or 0)
    assert driver and submission, status
    stream.produce(
        302, "--num-files", "3", "--lines-per-file", "6000", "--start-date", "2025-02-04",
        "--end-date", "2025-02-05", "--malformed-rate", "0.005",
    )  # fmt: skip
    # While the stream takes the new messages in (a micro-batch reads, parses and commits
    # them for several seconds after the producer ends).
    stream.d.k("delete", "pod", driver, "--wait=false")

    def restarted() -> bool:  # the operator names the new driver pod as the old one
        now = stream.d.app_status(stream.app)
        state = (now.get("applicationState") or {}).get("state")
        return now.get("submissionID") not in (None, submission) and state == "RUNNING"

    wait_for(f"{stream.app}'s driver to be started again", restarted, timeout=600)
    status = stream.d.app_status(stream.app)
    print(f"\n{stream.app}: driver {driver} deleted; submitted again: {status}")
    assert int(status.get("executionAttempts") or 0) > attempts, status
    assert "caught up" in stream.caught_up()
    stream.assert_exact()
    assert len(stream.manifests()) == 2


BROKER = "app.kubernetes.io/instance=logberg-dev,app.kubernetes.io/component=kafka"


def test_the_broker_deleted_mid_stream_comes_back_with_its_log_and_nothing_is_lost(
    stream: Stream,
) -> None:
    stream.produce(
        303, "--num-files", "3", "--lines-per-file", "6000", "--start-date", "2025-02-05",
        "--end-date", "2025-02-06", "--malformed-rate", "0.005",
    )  # fmt: skip
    ends = stream.position()["ends"]
    assert sum(ends.values()) > 0, ends
    [pod] = stream.d.obj("pods", "-l", BROKER)["items"]
    old = pod["metadata"]["uid"]
    # While the stream takes the new messages in.
    stream.d.k("delete", "pod", pod["metadata"]["name"], "--wait=false")

    def back() -> bool:  # another pod of the StatefulSet, ready
        pods = stream.d.obj("pods", "-l", BROKER)["items"]
        return any(
            p["metadata"]["uid"] != old
            and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
            for p in pods
        )

    took = wait_for("the broker to be started again and ready", back, timeout=600)
    print(f"\nbroker pod {pod['metadata']['name']} deleted; another ready after {took:.0f}s")
    assert "caught up" in stream.caught_up()
    # The new broker serves the same log: every partition ends where it did.
    assert stream.position()["ends"] == ends
    stream.assert_exact()
    assert len(stream.manifests()) == 3


def lag_probe(name: str, topic: str) -> dict[str, Any]:
    """The lag example (a ScheduledSparkApplication of `ingest --from ... --dry-run`), for
    `topic`, every 30 s instead of 5 minutes."""
    probe = yaml.safe_load((KAFKA_EXAMPLES / "lag.yaml").read_text())
    probe["metadata"]["name"] = name
    spec = probe["spec"]
    assert spec["template"]["arguments"] == [
        "ingest",
        "--from",
        "kafka:///access-logs",
        "--dry-run",
    ]
    spec["template"]["arguments"][2] = f"kafka:///{topic}"
    spec["schedule"] = "@every 30s"
    return dict(probe)


def test_a_stopped_streams_lag_is_pushed_on_schedule_and_its_alert_returns_the_topic(
    stream: Stream, tmp_path: Path
) -> None:
    lag = f'logberg_kafka_consumer_lag{{job="logberg_kafka_ingest",topic="{stream.topic}"}}'
    alert = alert_expr("LogbergKafkaLagGrowing")

    def alerting() -> list[dict[str, Any]]:
        return [s for s in prom.query(alert) if s["metric"].get("topic") == stream.topic]

    probe = f"kafka-lag-{stream.topic}"[:52]
    with prometheus(tmp_path, stream.d.gateway) as prom:
        # The stream's own last push, caught up: under the alert's threshold, no series.
        assert prom.value(f"sum({lag})") < 10000
        assert alerting() == []
        stored = stream.counts()
        stream.d.delete_app(stream.app)  # stopped; the producer goes on
        stream.d.k("apply", "-f", "-", stdin=json.dumps(lag_probe(probe, stream.topic)))
        try:
            made = stream.produce(
                304, "--num-files", "2", "--lines-per-file", "6000", "--start-date",
                "2025-02-06", "--end-date", "2025-02-07", "--malformed-rate", "0.005",
            )  # fmt: skip
            lines = made["totals"]["lines"]
            assert lines > 10000, made["totals"]  # over values.yaml's kafkaLagMessages
            # A run of the probe after the producer: the lag is every message it sent.
            eventually(
                f"{lag} to count the {lines} new messages",
                lambda: prom.query(f"sum({lag}) == {lines}"),
                timeout=600,
                every=2,
            )
            [fired] = eventually("the lag alert's series", alerting, timeout=120, every=2)
            assert float(fired["value"][1]) == lines, fired
            runs = stream.d.obj("scheduledsparkapplication", probe)["status"]
            assert runs.get("lastRunName"), runs
        finally:
            stream.d.k("delete", "scheduledsparkapplication", probe, "--ignore-not-found",
                       "--cascade=foreground", "--wait", "--timeout=300s")  # fmt: skip
    # The probe is a dry run: it wrote nothing.
    assert stream.counts() == stored
