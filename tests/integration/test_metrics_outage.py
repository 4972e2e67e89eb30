"""A Pushgateway outage never decides whether data lands: with LOGBERG_PUSHGATEWAY refused
(nothing listens) or hanging (a socket that takes the connection and never answers), each
job kind (a file ingest, analytics, `ingest --follow --once`, `ingest --from kafka --once`)
lands every line, exits 0 and warns once, naming the gateway. And the push itself, against
those and a gateway that answers 503, then a real Pushgateway that comes back: one warning
an outage, skipped pushes while it lasts, and the first push that gets through carries the
count of those that did not."""

from __future__ import annotations

import http.server
import logging
import socket
import subprocess
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from logberg.errors import ConfigError
from logberg.lakehouse.kafka import TopicUri, create_topic
from logberg.pipeline import metrics
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port
from tests.conftest import run_logberg
from tests.helpers.prometheus import pushgateway
from tests.integration.modes import CONNECT, IN_PROCESS

pytestmark = [pytest.mark.integration]

LINE = (
    '198.51.100.{n} - - [02/Mar/2025:11:00:{s:02d} +0000] "GET /p/{n} HTTP/1.1" 200 7 "-" "curl/8"'
)
WARNED = "did not take the push"


@pytest.fixture
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's view of the gateways, empty for the test."""
    monkeypatch.setattr(metrics, "_outages", {})
    monkeypatch.setattr(metrics, "_failed", Counter())


@pytest.fixture(scope="module")
def hanging() -> Iterator[str]:
    """A gateway that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def refused() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def unavailable() -> Iterator[str]:
    """A gateway that answers every request with 503."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_error(503, "Service Unavailable")

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def one_gauge() -> list[metrics.Metric]:
    return [metrics.gauge("logberg_test_value", "A test's value.", ({}, 7))]


@pytest.mark.parametrize("kind", ["refused", "hanging", "unavailable"])
def test_a_failed_push_warns_once_an_outage_and_skips_until_it_may_retry(
    fresh_state: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
    kind: str,
) -> None:
    url = request.getfixturevalue(kind)
    monkeypatch.setattr(metrics, "PUSH_TIMEOUT_S", 1.0)
    made = []

    def lazily() -> list[metrics.Metric]:
        made.append(1)
        return one_gauge()

    with caplog.at_level(logging.DEBUG, logger="logberg"):
        assert metrics.push(url, "logberg_ingest", lazily) is False
        assert metrics.push(url, "logberg_ingest", lazily) is False  # within RETRY_AFTER_S
        assert metrics.push(url, "logberg_analytics", one_gauge) is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert url in warnings[0] and metrics.GATEWAY_ENV in warnings[0] and WARNED in warnings[0]
    says = {"refused": "Connection refused", "hanging": "timed out", "unavailable": "HTTP 503"}
    assert says[kind] in warnings[0], warnings[0]
    assert made == [1]  # a skipped push makes nothing (no queries for its figures)
    assert metrics.failed_pushes("logberg_ingest") == 2
    assert metrics.failed_pushes("logberg_analytics") == 1


def test_the_first_push_after_an_outage_carries_the_gap(
    fresh_state: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setattr(metrics, "RETRY_AFTER_S", 0.0)  # each push is tried
    assert not metrics.push(url, "logberg_ingest", one_gauge)  # nothing listens yet
    assert not metrics.push(url, "logberg_ingest", one_gauge)
    with pushgateway(tmp_path, port=port), caplog.at_level(logging.INFO, logger="logberg"):
        assert metrics.push(url, "logberg_ingest", one_gauge)
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
            text = r.read().decode()
        pushed = {
            ln.split("{")[0]: ln.rsplit(" ", 1)[1]
            for ln in text.splitlines()
            if 'job="logberg_ingest"' in ln and not ln.startswith("#")
        }
        assert pushed["logberg_test_value"] == "7"
        assert pushed["logberg_metrics_failed_pushes"] == "2"
    again = [r.getMessage() for r in caplog.records if "takes pushes again" in r.getMessage()]
    assert len(again) == 1 and "2 of logberg_ingest" in again[0], again


def test_a_push_url_that_is_not_http_is_wrong_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for wrong in ("ftp://gateway:9091", "gateway:9091", "http://gateway:port"):
        monkeypatch.setenv(metrics.GATEWAY_ENV, wrong)
        with pytest.raises(ConfigError, match=metrics.GATEWAY_ENV):
            metrics.gateway()
    monkeypatch.setenv(metrics.GATEWAY_ENV, f"http://127.0.0.1:{free_port()}/")
    assert metrics.gateway() is not None  # well-formed, nothing listens: an outage, not an error


# ---- whole jobs, as processes --------------------------------------------------------------


def land(root: Path, lines: int) -> str:
    day = root / "raw" / "dt=2025-03-02"
    day.mkdir(parents=True)
    (day / "access-1.log").write_text(
        "".join(LINE.format(n=n, s=n % 60) + "\n" for n in range(lines))
    )
    return root.as_uri()


def landed_and_warned(
    r: subprocess.CompletedProcess[str], spark: SparkSession, lines: int, gateway: str
) -> None:
    """The job exited 0, warned once naming the gateway, and every line landed."""
    assert r.returncode == 0, r.stderr[-3000:]
    warned = [ln for ln in r.stderr.splitlines() if WARNED in ln]
    assert len(warned) == 1 and gateway in warned[0], r.stderr[-3000:]
    assert spark.table("nginx_logs.access_logs").count() == lines


@pytest.mark.parametrize("outage", ["refused", "hanging"])
def test_a_file_ingest_and_analytics_land_through_an_outage(
    server: LocalSettings,  # the commands run on this home's Spark Connect server
    fresh_namespace: LocalSettings,
    spark: SparkSession,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    outage: str,
) -> None:
    gateway = request.getfixturevalue(outage)
    env = {**CONNECT, metrics.GATEWAY_ENV: gateway}
    r = run_logberg(["ingest", "--input", land(tmp_path, 40)], env)
    landed_and_warned(r, spark, 40, gateway)
    r = run_logberg(["analytics"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert WARNED in r.stderr and "analytics: days=1" in r.stdout
    assert spark.table("nginx_logs.daily_top_ips").count() > 0


@pytest.mark.parametrize("outage", ["refused", "hanging"])
def test_a_followed_landing_lands_through_an_outage(
    fresh_namespace: LocalSettings,
    spark: SparkSession,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    outage: str,
) -> None:
    gateway = request.getfixturevalue(outage)
    landing = land(tmp_path / "in", 30)
    args = ["ingest", "--input", landing, "--follow", "--once"]
    args += ["--checkpoint", (tmp_path / "ck").as_uri()]
    r = run_logberg(args, {**IN_PROCESS, metrics.GATEWAY_ENV: gateway})
    landed_and_warned(r, spark, 30, gateway)
    assert "stream batch 0 committed" in r.stdout


@pytest.mark.parametrize("outage", ["refused", "hanging"])
def test_a_topic_ingest_lands_through_an_outage(
    fresh_namespace: LocalSettings,
    spark: SparkSession,
    broker: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    outage: str,
) -> None:
    from confluent_kafka import Producer

    gateway = request.getfixturevalue(outage)
    topic = TopicUri(broker, f"outage-{outage}", "test")
    assert create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": broker})
    for n in range(25):
        producer.produce(topic.topic, LINE.format(n=n, s=n).encode())
    assert producer.flush(30) == 0
    args = ["ingest", "--from", topic.uri, "--once", "--checkpoint", (tmp_path / "ck").as_uri()]
    r = run_logberg(args, {**IN_PROCESS, metrics.GATEWAY_ENV: gateway})
    landed_and_warned(r, spark, 25, gateway)
