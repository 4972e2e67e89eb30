"""This home's warm Spark Connect server beyond the tables: job commands take up the session
a finished one handed on, `logberg query` prints byte for byte what the in-process query
prints, a server killed mid-command is named and not replaced, and the settings that must
fail fast. (The same tables in both modes: test_spark_modes.py.)

The commands run as real `logberg` processes against the session's metastore and S3
server; the server is a real `SparkConnectServer` started from the pinned PySpark's jars
(conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from logberg_platform import connect_server, local
from logberg_platform.local_settings import LocalSettings
from tests.conftest import REPO, reset_namespace, run_logberg
from tests.integration.modes import (
    CONNECT,
    GOLD_TABLES,
    IN_PROCESS,
    MODES,
    canon,
    mode_logged,
    ok,
    table,
)
from tests.integration.test_ingest import counts, expected

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]


RELEASE = (
    "import os, sys; os.environ['SPARK_CONNECT_MODE_ENABLED'] = '1';"
    "from pyspark.sql.connect.client.core import DefaultChannelBuilder;"
    "from pyspark.sql.connect.session import SparkSession;"
    "url = f'{sys.argv[1]};session_id={sys.argv[2]}';"
    "s = SparkSession.builder.channelBuilder(DefaultChannelBuilder(url)).create();"
    "s.conf.get('spark.app.id'); s.client.release_session()"
)


def slots(s: LocalSettings) -> dict[str, dict[str, Any]]:
    folder = connect_server.sessions_dir(s)
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def test_job_commands_take_up_the_session_a_finished_one_handed_on(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]]
) -> None:
    """Job commands one after another run in one server session (its compiled code is
    reused); the shell, which runs what a user types, takes a session of its own; a slot
    whose session the server closed gets a new one, and the tables stay exact."""
    folder, manifest = landing
    reset_namespace(spark)
    shutil.rmtree(connect_server.sessions_dir(server), ignore_errors=True)
    ok(["ingest", "--input", folder.as_uri()], CONNECT)
    first = slots(server)
    assert list(first) == ["0"] and first["0"]["clean"] is True, first
    ok(["sql", "-e", "USE nginx_logs; SET spark.sql.shuffle.partitions=3; SELECT 1;"], CONNECT)
    ok(["analytics"], CONNECT)
    assert slots(server) == first  # the same session, handed on again
    state = connect_server.served(server)
    assert state is not None
    client = connect_server.client(server, state)
    released = subprocess.run(
        [sys.executable, "-c", RELEASE, client.channel(), first["0"]["session_id"]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert released.returncode == 0, released.stderr[-2000:]
    ok(["analytics", "--full"], CONNECT)
    renewed = slots(server)
    assert list(renewed) == ["0"] and renewed["0"]["clean"] is True, renewed
    assert renewed["0"]["session_id"] != first["0"]["session_id"]
    assert counts(spark, manifest) == expected(manifest)
    on_server = {n: canon(table(spark, n).collect()) for n in GOLD_TABLES}
    ok(["analytics", "--full"], IN_PROCESS)
    for name in GOLD_TABLES:
        assert canon(table(spark, name).collect()) == on_server[name], name


# A process that opened a session before its command's (a test's helper, a library user),
# whose command dies with a checkpoint in its frames.
CHECKPOINT_THEN_FAIL = """
from logberg_platform import local
local.command_session("opened-first")
spark = local.command_session("the-command")
rows = spark.range(3).localCheckpoint()
print("checkpointed rows:", rows.count(), flush=True)
raise RuntimeError("the command fails with its checkpoint alive")
"""


def test_a_commands_checkpoint_is_its_own_and_a_failed_command_exits(
    server: LocalSettings,
) -> None:
    """A command's `localCheckpoint` is read from the command's own session even when the
    process opened another session first (PySpark gave it to the first one, which the
    server says has no such DataFrame); and a command that dies with a checkpoint alive
    exits with its error, releasing it, instead of hanging in PySpark's finalizer."""
    run = subprocess.run(
        [sys.executable, "-c", CHECKPOINT_THEN_FAIL],
        env={**os.environ, **CONNECT}, cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.stdout == "checkpointed rows: 3\n", run.stderr[-3000:]
    assert run.returncode == 1, run.stderr[-3000:]
    assert run.stderr.rstrip().endswith(
        "RuntimeError: the command fails with its checkpoint alive"
    ), run.stderr[-3000:]


# Every kind of value a query can return, for the direct client's conversion (structs, maps,
# both timestamps, decimals, bytes, NULL, non-ASCII, duplicate names).
EVERY_TYPE = (
    "SELECT 1 AS a, 2 AS a, CAST('2025-01-06 10:00:00+00:00' AS TIMESTAMP) AS ts, "
    "CAST('2025-01-06 10:00:00' AS TIMESTAMP_NTZ) AS ntz, DATE'2025-01-06' AS d, "
    "CAST(1.50 AS DECIMAL(10,2)) AS dec, map('k', 1) AS m, named_struct('x', 1, 'y', 'z') AS s, "
    "array(1, 2) AS arr, X'0102' AS bin, CAST(NULL AS STRING) AS n, 'é' AS u, 1.5D AS dbl, "
    "true AS b"
)


def test_query_prints_the_same_values_and_errors_in_both_modes(server: LocalSettings) -> None:
    """`logberg query` on the server talks gRPC and Arrow directly (no pandas): its output
    is byte for byte the in-process output, in every format and in another time zone, and a
    statement Spark rejects is one line naming Spark's error class, exit status 1."""
    for fmt in ("table", "csv", "jsonl"):
        out = {
            mode: ok(["query", EVERY_TYPE, "--format", fmt], {**env, "TZ": "America/New_York"})
            for mode, env in MODES.items()
        }
        assert out["connect"].stdout == out["in-process"].stdout, fmt
        mode_logged(out["connect"], "connect")
    row = out["connect"].stdout.splitlines()
    assert len(row) == 1
    assert '"ts": "2025-01-06T05:00:00"' in row[0]  # UTC 10:00 in New York
    assert '"m": {"k": 1}' in row[0] and '"s": [1, "z"]' in row[0] and '"bin": "0102"' in row[0]
    empty = {
        mode: ok(["query", "SELECT 1 AS one, 'x' AS two WHERE false", "--format", "csv"], env)
        for mode, env in MODES.items()
    }
    assert empty["connect"].stdout == empty["in-process"].stdout == "one,two\n"
    for mode, env in MODES.items():
        r = run_logberg(["query", "SELECT * FROM nginx_logs.no_such_table"], env)
        assert r.returncode == 1, (mode, r.stderr[-2000:])
        assert "logberg: error: [TABLE_OR_VIEW_NOT_FOUND]" in r.stderr, mode
        assert "Traceback" not in r.stderr, mode
        assert "QueryContextLogger" not in r.stderr, mode  # PySpark's JSON copy of the error
        assert r.stdout == "", mode
    # ... which --log-level DEBUG shows (in-process: where PySpark converts the error)
    r = run_logberg(
        ["--log-level", "DEBUG", "query", "SELECT * FROM nginx_logs.no_such_table"],
        MODES["in-process"],
    )
    assert r.returncode == 1 and '"logger": "SQLQueryContextLogger"' in r.stderr, r.stderr[-2000:]


# -- settings that fail fast ----------------------------------------------------------------


def test_a_wrong_mode_names_the_setting(server: LocalSettings) -> None:
    r = run_logberg(["query", "SELECT 1"], {"LOGBERG_SPARK_MODE": "warm"})
    assert r.returncode == 2
    assert "LOGBERG_SPARK_MODE='warm'" in r.stderr


def test_connect_forced_without_a_server_names_the_setting(
    server: LocalSettings, tmp_path: Path
) -> None:
    """Another home, whose server does not run: connect mode fails before any Spark."""
    r = run_logberg(["query", "SELECT 1"], {**CONNECT, "LOGBERG_HOME": str(tmp_path / "h")})
    assert r.returncode == 2
    assert "LOGBERG_SPARK_MODE=connect: no Spark Connect server runs" in r.stderr


@pytest.mark.parametrize("port", ["abc", "70000"])
def test_a_bad_port_names_the_setting(server: LocalSettings, tmp_path: Path, port: str) -> None:
    env = {"LOGBERG_HOME": str(tmp_path / "h"), "LOGBERG_CONNECT_PORT": port}
    r = run_logberg(["local", "up"], env)
    assert r.returncode == 2
    assert f"LOGBERG_CONNECT_PORT={port if port == '70000' else repr(port)}" in r.stderr


def test_a_port_in_use_names_the_setting(server: LocalSettings, tmp_path: Path) -> None:
    """Another home's server on the port this home asks for: `local up` says so."""
    taken = connect_server.served(server)
    assert taken is not None
    env = {
        "LOGBERG_HOME": str(tmp_path / "h"),
        "LOGBERG_CONNECT_PORT": str(taken.port),
    }
    r = run_logberg(["local", "up"], env)
    try:
        assert r.returncode == 2, r.stderr[-2000:]
        assert f"LOGBERG_CONNECT_PORT={taken.port}: something else listens" in r.stderr
    finally:
        run_logberg(["local", "down"], env)


def test_a_bad_token_is_refused_and_named(server: LocalSettings) -> None:
    path = connect_server.token_file(server)
    good = path.read_text()
    path.write_text("not-the-token")
    try:
        r = run_logberg(["query", "SELECT 1"], CONNECT)
    finally:
        path.write_text(good)
    assert r.returncode == 2
    assert f"{path}: the local Spark Connect server at sc://localhost" in r.stderr
    assert "refused the token" in r.stderr
    assert good not in r.stderr + r.stdout


def test_other_lakehouse_settings_than_the_servers_are_named(server: LocalSettings) -> None:
    r = run_logberg(["query", "SELECT 1"], {"LOGBERG_WAREHOUSE": "file:///elsewhere"})
    assert r.returncode == 2
    assert "LOGBERG_WAREHOUSE=file:///elsewhere: the running Spark Connect server serves" in (
        r.stderr
    )


def test_a_server_that_dies_mid_command_is_named_not_replaced(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]]
) -> None:
    """Kill the server while a command runs on it: the command fails, naming the server and
    its log; it does not go on in-process. Then a fresh server serves again."""
    folder, _ = landing
    svc = connect_server.service(server)
    argv = [sys.executable, "-m", "logberg.cli", "ingest", "--input", folder.as_uri(), "--full"]
    proc = subprocess.Popen(
        argv, env={**os.environ, **CONNECT}, cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Spark Connect server" in line:  # the command is on the server now
            break
    pid = svc.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    assert "the local Spark Connect server at sc://localhost" in err
    assert str(svc.log_file) in err
    assert "spark: in-process" not in err
    cfg = local.lakehouse_config(server)
    connect_server.stop(server)  # waits until the killed JVM is gone; clears its state
    connect_server.start(server, cfg, local.spark_runtime(server, cfg))
    assert ok(["query", "SELECT 1 AS one", "--format", "csv"], CONNECT).stdout.split() == [
        "one",
        "1",
    ]
