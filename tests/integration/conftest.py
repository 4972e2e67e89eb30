"""Fixtures of the integration files that run commands on this home's Spark Connect server
(test_spark_modes, test_connect_server, test_warm_sessions); each file gets its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from logberg_platform import connect_server, local
from logberg_platform.local_settings import LocalSettings
from tests.integration.test_ingest import generate


@pytest.fixture(scope="module")
def server(lakehouse: LocalSettings) -> Iterator[LocalSettings]:
    """This home's Spark Connect server, for the module."""
    s = lakehouse
    cfg = local.lakehouse_config(s)
    connect_server.start(s, cfg, local.spark_runtime(s, cfg))
    try:
        yield s
    finally:
        connect_server.stop(s)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Generated logs (seed 37) and their manifest, for the module."""
    out = tmp_path_factory.mktemp("modes-landing")
    return out, generate(out, 37)
