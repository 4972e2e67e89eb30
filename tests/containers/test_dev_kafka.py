"""The dev Kafka broker's image (images/dev-kafka): Apache Kafka's own broker in KRaft mode,
as charts/logberg-dev runs it. Real clients against a real container: the ApiVersions probe
the chart's readiness uses, then confluent-kafka (what the generator produces with)."""

from __future__ import annotations

import importlib.util
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.containers.conftest import PREFIX, Engine

PROBE = Path(__file__).resolve().parents[2] / "images" / "dev-kafka" / "probe.py"
READY_TIMEOUT = 180.0


def probe(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROBE), address, "3"], capture_output=True, text=True, timeout=30
    )


def wait_ready(engine: Engine, name: str, address: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while probe(address).returncode != 0:
        if not engine.running(name):
            raise AssertionError(f"dev-kafka exited:\n{engine.logs(name)[-4000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"dev-kafka not ready:\n{engine.logs(name)[-4000:]}")
        time.sleep(1)


def consume(bootstrap: str, topic: str, want: int) -> list[bytes]:
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g-" + secrets.token_hex(4),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[bytes] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < want and time.monotonic() < deadline:
            m: Any = c.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


@pytest.mark.skipif(importlib.util.find_spec("confluent_kafka") is None, reason="no client")
def test_the_dev_broker_runs_read_only_as_non_root_and_keeps_its_log_over_a_restart(
    engine: Engine, tags: dict[str, str]
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"{PREFIX}-kafka"
    volume = f"{PREFIX}-kafka-data"
    engine.run("volume", "create", volume)
    try:
        engine.run(
            "run", "-d", *engine.container_args(name), "--read-only", "--tmpfs", "/tmp",
            "-v", f"{volume}:/var/lib/kafka", tags["dev-kafka"],
        )  # fmt: skip
        address = f"{engine.ip(name)}:9092"
        wait_ready(engine, name, address)
        assert "answers ApiVersions" in probe(address).stdout
        assert engine.run("exec", name, "id", "-u").stdout.strip() == "1000"
        denied = engine.run("exec", name, "touch", "/opt/kafka/x", check=False)
        assert denied.returncode != 0, "the root filesystem is read-only"

        admin = AdminClient({"bootstrap.servers": address})  # held until the topic is made
        admin.create_topics([NewTopic("lines", 2, 1)])["lines"].result(30)
        sent = [f"line {i}".encode() for i in range(500)]
        p = Producer({"bootstrap.servers": address, "enable.idempotence": True})
        for v in sent:
            p.produce("lines", v)
        assert p.flush(30) == 0
        assert sorted(consume(address, "lines", len(sent))) == sorted(sent)

        # Restarted (a new address, the same volume): formatted once, the messages kept.
        engine.run("restart", "-t", "10", name)
        address = f"{engine.ip(name)}:9092"
        wait_ready(engine, name, address)
        assert engine.logs(name).count("formatting the KRaft storage") == 1
        assert sorted(consume(address, "lines", len(sent))) == sorted(sent)
    finally:
        engine.remove(name)
        engine.run("volume", "rm", "-f", volume, check=False)
