"""Shared fixtures: one temporary $LOGBERG_HOME with a real Derby-backed Hive Metastore
thrift service and a real S3-compatible server, and one session-wide SparkSession."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from logberg.procs import free_port

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def lakehouse_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A private LOGBERG_HOME with the metastore (Derby) and the S3 server running."""
    from logberg import local
    from logberg.settings import LocalSettings

    home = tmp_path_factory.mktemp("logberg-home")
    env = {
        "LOGBERG_HOME": str(home),
        "LOGBERG_METASTORE_PORT": str(free_port()),
        "LOGBERG_S3_PORT": str(free_port()),
        "LOGBERG_SHUFFLE_PARTITIONS": "2",
        "LOGBERG_SPARK_MASTER": "local[2]",
        "LOGBERG_DRIVER_MEMORY": "1g",
    }
    saved = {k: os.environ.get(k) for k in [*env, "LOGBERG_METASTORE_DB", "LOGBERG_WAREHOUSE"]}
    os.environ.update(env)
    os.environ.pop("LOGBERG_METASTORE_DB", None)
    os.environ.pop("LOGBERG_WAREHOUSE", None)
    settings = LocalSettings.from_env()
    local.up(settings, with_s3=True)
    try:
        yield env
    finally:
        local.down(settings)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def spark(lakehouse_env: dict[str, str]):  # type: ignore[no-untyped-def]
    from logberg.session import build_session, ensure_database

    session = build_session("logberg-tests", extra={"spark.ui.enabled": "false"})
    ensure_database(session)
    yield session
    session.stop()


def run_logberg(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the real `logberg` console script in a child process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [str(Path(sys.executable).parent / "logberg"), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
