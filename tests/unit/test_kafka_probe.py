"""The dev broker's readiness probe (images/dev-kafka/probe.py) refuses what is not a Kafka
broker: nothing listening, and a server that answers in another protocol. (That it passes
against a real broker: tests/containers/test_dev_kafka.py.)"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[2] / "images" / "dev-kafka" / "probe.py"


def probe(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROBE), address, "3"], capture_output=True, text=True, timeout=30
    )


@pytest.fixture
def http_like() -> Iterator[str]:
    """A server that reads a request and answers as an HTTP server would."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_nothing_listening_is_not_ready() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    r = probe(f"127.0.0.1:{port}")
    assert r.returncode == 1 and "no ApiVersions answer" in r.stderr


def test_another_protocol_is_not_ready(http_like: str) -> None:
    r = probe(http_like)
    assert r.returncode == 1 and "is not an ApiVersions response" in r.stderr, r.stderr


def test_a_wrong_address_is_a_usage_error() -> None:
    assert probe("no-port").returncode == 2
