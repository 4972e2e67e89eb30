"""Fixtures of the integration files that run commands on this home's Spark Connect server
by name (test_spark_modes, test_connect_server, test_warm_sessions): the server the session
started (`lakehouse`), or, when a test stopped it, one of the file's own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from logberg_platform import connect_server, kafka_broker, local
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port
from tests.integration.test_ingest import generate


@pytest.fixture(scope="module")
def server(lakehouse: LocalSettings) -> Iterator[LocalSettings]:
    """This home's Spark Connect server, running for the module; one the module starts
    (the session's was stopped) stops with it."""
    s = lakehouse
    cfg = local.lakehouse_config(s)
    started = connect_server.served(s) is None
    connect_server.start(s, cfg, local.spark_runtime(s, cfg))
    try:
        yield s
    finally:
        if started:
            connect_server.stop(s)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Generated logs (seed 37) and their manifest, for the module."""
    out = tmp_path_factory.mktemp("modes-landing")
    return out, generate(out, 37)


@pytest.fixture(scope="module")
def broker(lakehouse: LocalSettings) -> Iterator[str]:
    """This home's Kafka broker on a free port, for the module; its bootstrap."""
    os.environ[kafka_broker.PORT_ENV] = str(free_port())
    try:
        yield kafka_broker.start(lakehouse).bootstrap
    finally:
        kafka_broker.stop(lakehouse)
        os.environ.pop(kafka_broker.PORT_ENV, None)
