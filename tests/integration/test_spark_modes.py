"""Every job in both Spark modes, with the same rows: on this home's warm Spark Connect server
and in-process (LOGBERG_SPARK_MODE); two clients at once, a client killed mid-ingest, a
server restarted between runs. (The server's sessions, its query output and the settings
that must fail fast: test_connect_server.py.)

The commands run as real `logberg` processes against the session's metastore and S3
server; the server is a real `SparkConnectServer` started from the pinned PySpark's jars
(conftest.py).
"""

from __future__ import annotations

import os
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
from tests.integration.test_ingest import counts, expected, generate

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]


def test_run_gives_the_same_tables_in_both_modes(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]]
) -> None:
    """`logberg run` (ingest, then analytics) on the server and in-process: the same rows
    in access_logs, the rejects and every gold table; the counts are the manifest's."""
    folder, manifest = landing
    results: dict[str, dict[str, list[Any]]] = {}
    for mode, env in MODES.items():
        reset_namespace(spark)
        r = ok(["run", "--input", folder.as_uri()], env)
        mode_logged(r, mode)
        assert counts(spark, manifest) == expected(manifest), mode
        results[mode] = {
            name: table(spark, name).collect()
            for name in ("access_logs", "access_logs_rejects", *GOLD_TABLES)
        }
    for name, rows in results["connect"].items():
        # daily_latency needs $request_time, which the combined format has not.
        assert rows or name == "daily_latency", f"{name}: no rows to compare"
        assert canon(rows) == canon(results["in-process"][name]), name


def test_ingest_and_analytics_in_each_mode_are_exact_on_rerun(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]]
) -> None:
    """Ingest on the server, again in-process, then analytics both ways: no row twice."""
    folder, manifest = landing
    reset_namespace(spark)
    ok(["ingest", "--input", folder.as_uri()], CONNECT)
    ok(["ingest", "--input", folder.as_uri(), "--full"], IN_PROCESS)
    ok(["ingest", "--input", folder.as_uri(), "--full"], CONNECT)
    assert counts(spark, manifest) == expected(manifest)
    ok(["analytics", "--full"], CONNECT)
    first = {n: table(spark, n).collect() for n in GOLD_TABLES}
    ok(["analytics", "--full"], IN_PROCESS)
    for name in GOLD_TABLES:
        assert canon(table(spark, name).collect()) == canon(first[name]), name


def test_query_sql_maintain_rollback_and_report_in_both_modes(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, manifest = landing
    reset_namespace(spark)
    ok(["run", "--input", folder.as_uri()], IN_PROCESS)
    total = manifest["totals"]["valid"]
    q = "SELECT COUNT(*) AS n FROM nginx_logs.access_logs"
    for mode, env in MODES.items():
        r = ok(["query", q, "--format", "csv"], env)
        assert r.stdout.splitlines() == ["n", str(total)], mode
        mode_logged(r, mode)
        shell = ok(["sql", "-e", f"USE nginx_logs; {q.replace('nginx_logs.', '')};"], env)
        assert shell.stdout.split()[-1] == str(total), (mode, shell.stdout)
        ok(["maintain", "--table", "access_logs"], env)
        assert counts(spark, manifest) == expected(manifest), mode
        report = tmp_path / f"report-{mode}.html"
        ok(["report", "--output", str(report)], env)
        assert report.stat().st_size > 10_000
    # Rollback, on the server: access_logs back to before a bad delete.
    good = spark.sql(
        "SELECT snapshot_id FROM nginx_logs.access_logs.snapshots ORDER BY committed_at DESC"
    ).first()
    assert good is not None
    spark.sql("DELETE FROM nginx_logs.access_logs WHERE status_code >= 400")
    ok(["rollback", "access_logs", "--to", str(good.snapshot_id)], CONNECT)
    assert counts(spark, manifest) == expected(manifest)
    # And in-process, to the snapshot of the delete, then forward again.
    spark.sql("DELETE FROM nginx_logs.access_logs WHERE status_code >= 400")
    ok(["rollback", "access_logs", "--to", str(good.snapshot_id)], IN_PROCESS)
    assert counts(spark, manifest) == expected(manifest)


def test_follow_runs_in_process_beside_the_server(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Streaming ingest (`--follow --once`) keeps its state in its own process: with a
    server running it runs in-process and says why; forced onto the server it is an error
    naming the setting."""
    folder, manifest = landing
    reset_namespace(spark)
    checkpoint = (tmp_path / "checkpoint").as_uri()
    args = ["ingest", "--input", folder.as_uri(), "--follow", "--once", "--checkpoint", checkpoint]
    forced = run_logberg(args, CONNECT)
    assert forced.returncode == 2
    assert "LOGBERG_SPARK_MODE=connect: ingest --follow runs in-process" in forced.stderr
    r = ok(args, {"LOGBERG_SPARK_MODE": "auto"})
    assert "spark: in-process, local[2] (ingest --follow runs in-process)" in r.stderr
    assert counts(spark, manifest) == expected(manifest)


def test_two_clients_at_once_give_exact_tables(
    spark: SparkSession, server: LocalSettings, tmp_path: Path
) -> None:
    """Two ingests of one landing, started together on the one server: every line once."""
    reset_namespace(spark)
    landing = tmp_path / "landing"
    manifest = generate(landing, 41)
    argv = [sys.executable, "-m", "logberg.cli", "ingest", "--input", landing.as_uri()]
    env = {**os.environ, **CONNECT}
    procs = [
        subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-3000:]
    assert counts(spark, manifest) == expected(manifest)


def test_a_client_killed_mid_ingest_leaves_nothing_half_done(
    spark: SparkSession, server: LocalSettings, tmp_path: Path
) -> None:
    """SIGKILL the client once its first commit landed; the tables hold whole files only,
    and the next run makes them exact."""
    reset_namespace(spark)
    landing = tmp_path / "landing"
    manifest = generate(landing, 43, "--num-files", "6")
    argv = [sys.executable, "-m", "logberg.cli", "ingest", "--input", landing.as_uri()]
    argv += ["--max-bytes-per-commit", "200000"]
    env = {**os.environ, **CONNECT}
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # the ingest logs each committed batch
        if "committed" in line and "file(s), snapshot" in line:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    whole = spark.sql(
        "SELECT source_file, COUNT(*) AS n FROM nginx_logs.access_logs GROUP BY source_file"
    ).collect()
    per_file = {str(r.source_file).rsplit("/", 1)[-1]: r.n for r in whole}
    valid = {Path(f["path"]).name: f["valid"] for f in manifest["files"]}
    for name, n in per_file.items():
        assert n == valid[name], f"{name}: {n} rows, a file lands whole or not at all"
    ok(["ingest", "--input", landing.as_uri()], CONNECT)
    assert counts(spark, manifest) == expected(manifest)


def test_a_restarted_server_changes_nothing(
    spark: SparkSession, server: LocalSettings, landing: tuple[Path, dict[str, Any]]
) -> None:
    folder, manifest = landing
    reset_namespace(spark)
    ok(["run", "--input", folder.as_uri()], CONNECT)
    before = {n: table(spark, n).collect() for n in GOLD_TABLES}
    s = server
    connect_server.stop(s)
    cfg = local.lakehouse_config(s)
    connect_server.start(s, cfg, local.spark_runtime(s, cfg))
    ok(["run", "--input", folder.as_uri()], CONNECT)
    assert counts(spark, manifest) == expected(manifest)
    for name in GOLD_TABLES:
        assert canon(table(spark, name).collect()) == canon(before[name]), name


# Ends the server session of a given id as PySpark's own client does (argv: URL, id).
