"""Shared fixtures.

* `spark`: the one session-wide SparkSession (`local[2]`, two shuffle partitions, UI off).
  It is configured for a private $LOGBERG_HOME whose metastore and S3 server ports are
  reserved up front, but it starts no service: the fast tests (pure transforms) never touch
  the catalog.
* `lakehouse`: starts that home's real Hive Metastore (Derby), S3 server and Spark Connect
  server, once, for the integration tests; `fresh_namespace` gives a test an empty
  nginx_logs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from logberg.lakehouse.schema import DATABASE
from logberg.lakehouse.session import CATALOG, LakehouseConfig, build_session
from logberg.lakehouse.tables import ensure_database, existing
from logberg_platform import local, s3server
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port

REPO = Path(__file__).resolve().parents[1]
HOME_ENV = (
    "LOGBERG_HOME",
    "LOGBERG_METASTORE_PORT",
    "LOGBERG_S3_PORT",
    "LOGBERG_CONNECT_PORT",
    "LOGBERG_SPARK_MODE",
    "LOGBERG_SHUFFLE_PARTITIONS",
    "LOGBERG_SPARK_MASTER",
    "LOGBERG_DRIVER_MEMORY",
    "LOGBERG_METASTORE_DB",
    "LOGBERG_WAREHOUSE",
    "LOGBERG_METASTORE_URI",
    "LOGBERG_S3_ENDPOINT",
    "LOGBERG_LANDING",
    "LOGBERG_JAVA_OPTIONS",
)
# Every JVM of the tests' homes (Spark in-process, the Spark Connect server, the metastore,
# the broker) compiles with C1 only: the tests' data is small, so their JVMs spend their
# CPU starting up, where C2's compilations do not pay back (a 2,000-line ingest: 13 s of
# CPU with logberg's own options, 9 s with these). Set LOGBERG_JAVA_OPTIONS to override.
TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    from tests.helpers import timing

    timing.record(report)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.helpers import timing

    timing.summary(lambda text, **kw: terminalreporter.write_line(text, **kw))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Clear what an interrupted earlier run left (test containers)."""
    from tests.helpers.leftovers import reap

    reap(lambda msg: print(f"[leftovers] {msg}", file=sys.stderr))


@pytest.fixture(scope="session")
def home_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSettings]:
    """A private LOGBERG_HOME in the environment (for child processes too), nothing started."""
    home = tmp_path_factory.mktemp("logberg-home")
    java_options = os.environ.get("LOGBERG_JAVA_OPTIONS", TEST_JAVA_OPTIONS)
    env = {
        "LOGBERG_HOME": str(home),
        "LOGBERG_METASTORE_PORT": str(free_port()),
        "LOGBERG_S3_PORT": str(free_port()),
        "LOGBERG_CONNECT_PORT": str(free_port()),
        "LOGBERG_SHUFFLE_PARTITIONS": "2",
        "LOGBERG_SPARK_MASTER": "local[2]",
        "LOGBERG_DRIVER_MEMORY": "1g",
        "LOGBERG_JAVA_OPTIONS": java_options,
    }
    saved = {k: os.environ.get(k) for k in HOME_ENV}
    for k in HOME_ENV:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        yield LocalSettings.from_env()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def spark(home_settings: LocalSettings) -> Iterator[SparkSession]:
    """The session-wide SparkSession; its catalog points at the home's (not yet started)
    metastore and its S3A at the home's S3 server, so integration tests share it."""
    s = home_settings
    s3server.credentials(s)  # the keys exist before the JVM starts (it inherits them)
    cfg = LakehouseConfig(
        metastore_uri=s.metastore_uri, warehouse=s.warehouse.as_uri(), s3_endpoint=s.s3_endpoint
    )
    session = build_session(
        "logberg-tests",
        cfg,
        local.spark_runtime(s, cfg),
        extra={"spark.ui.enabled": "false"},
        validate=False,  # nothing runs yet: `lakehouse` starts the services
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def lakehouse(home_settings: LocalSettings, spark: SparkSession) -> Iterator[LocalSettings]:
    """The home's real metastore (Derby), S3 server and Spark Connect server, running, as
    `logberg local up` leaves them; nginx_logs exists.

    The commands the tests run take the default mode, as a user's do: on the warm server
    (a command's JVM start, catalog and JIT warm-up once a session, not once a command). A
    test that needs a driver of its own (one it kills, two that commit side by side) sets
    LOGBERG_SPARK_MODE=in-process for it; test_spark_modes.py compares the two modes."""
    local.up(home_settings, with_s3=True, with_connect=True)
    try:
        ensure_database(spark)
        yield home_settings
    finally:
        local.down(home_settings)


@pytest.fixture(scope="session")
def lakehouse_env(lakehouse: LocalSettings) -> dict[str, str]:
    """The home's LOGBERG_* variables (child processes inherit them; tests override some)."""
    return {k: v for k in HOME_ENV if (v := os.environ.get(k)) is not None}


def reset_namespace(spark: SparkSession) -> None:
    """Drop every table of nginx_logs (PURGE): for tests that read the namespace as a whole
    (analytics' pending ingest runs, maintenance of every table)."""
    for name in existing(spark):
        spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.{DATABASE}.{name} PURGE")


@pytest.fixture
def fresh_namespace(lakehouse: LocalSettings, spark: SparkSession) -> LocalSettings:
    """An empty nginx_logs for this test."""
    reset_namespace(spark)
    return lakehouse


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


def run_side_by_side(
    commands: dict[str, list[str]], logs: Path, timeout: float = 900
) -> dict[str, str]:
    """Run the commands at once, each one's output in a file under `logs` (never a pipe: a
    child blocked on a full pipe while it holds a table lock would stall the others), and
    wait for all; returns each one's stdout. Any failure or timeout fails the test with the
    tails of every log."""
    logs.mkdir(parents=True, exist_ok=True)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name, argv in commands.items():
        with open(logs / f"{name}.out", "wb") as out, open(logs / f"{name}.err", "wb") as err:
            procs[name] = subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO)
    deadline = time.monotonic() + timeout
    try:
        for proc in procs.values():
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    failed = {n: p.returncode for n, p in procs.items() if p.returncode != 0}
    if failed:
        tails = "\n".join(
            f"--- {n} (exit {p.returncode}):\n{(logs / f'{n}.err').read_text()[-3000:]}"
            for n, p in procs.items()
        )
        raise AssertionError(f"side-by-side run failed or timed out ({timeout:.0f} s): {tails}")
    return {n: (logs / f"{n}.out").read_text() for n in procs}


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual, built once per session with `mkdocs build --strict` (as `make docs`)."""
    site = tmp_path_factory.mktemp("docs-site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    config = REPO / "docs" / "mkdocs.yml"
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--quiet", "-f", config, "-d", site],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    return site
