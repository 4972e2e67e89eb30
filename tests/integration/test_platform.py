"""Acceptance for the local platform: real HMS thrift service (Derby and PostgreSQL),
Iceberg through it, concurrent writers, the CLI query surface, the S3 path, fail-fast config."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from logberg_platform.supervisor import free_port
from tests.conftest import REPO, run_logberg, run_side_by_side
from tests.integration.pg import PgServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]


def test_iceberg_lifecycle_through_thrift_metastore_on_derby(spark) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tests.helpers.lifecycle", "nginx_logs.lifecycle_derby"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["now"] == [[1, "a"], [2, "B"], [3, "c"]]
    assert result["then"] == [[1, "a"], [2, "b"]]


def test_spark_hive_client_and_iceberg_speak_to_the_pinned_metastore(spark) -> None:
    """Spark's built-in Hive client (get_table) and Iceberg's HiveCatalog both work against
    the metastore version we ship; Hive >= 4.0.1 would fail here with 'Invalid method name'."""
    from logberg.versions import pins
    from logberg_platform.local_settings import LocalSettings

    spark.sql("CREATE TABLE IF NOT EXISTS nginx_logs.pairing (id INT) USING iceberg")
    spark.sql("INSERT INTO nginx_logs.pairing VALUES (7)")
    # spark_catalog goes through Spark's Hive 2.3 client, which calls get_table.
    tables = {r.tableName for r in spark.sql("SHOW TABLES IN spark_catalog.nginx_logs").collect()}
    assert "pairing" in tables
    assert spark.sql("SELECT id FROM spark_catalog.nginx_logs.pairing").collect()[0][0] == 7
    log = (LocalSettings.from_env().logs / "metastore.log").read_text()
    assert f"hive-standalone-metastore-{pins().hive}.jar" in log


@pytest.fixture(scope="module")
def postgres() -> Iterator[PgServer]:
    base = Path(tempfile.mkdtemp(prefix="logberg-pg-"))
    base.chmod(0o755)
    server = PgServer(datadir=base / "data", port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_home(
    postgres: PgServer, lakehouse_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """A second LOGBERG_HOME, side by side with the Derby one, backed by PostgreSQL."""
    postgres.create_database("hms")
    env = {
        "LOGBERG_HOME": str(tmp_path_factory.mktemp("pg-home")),
        "LOGBERG_METASTORE_PORT": str(free_port()),
        "LOGBERG_S3_PORT": str(free_port()),
        "LOGBERG_CONNECT_PORT": str(free_port()),
        "LOGBERG_METASTORE_DB": f"postgresql://postgres@127.0.0.1:{postgres.port}/hms",
    }
    up = run_logberg(["local", "up"], env)
    assert up.returncode == 0, up.stderr
    assert f"thrift://localhost:{env['LOGBERG_METASTORE_PORT']}" in up.stdout
    try:
        yield env
    finally:
        down = run_logberg(["local", "down"], env)
        assert down.returncode == 0


def test_iceberg_lifecycle_through_thrift_metastore_on_postgres(pg_home: dict[str, str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tests.helpers.lifecycle", "nginx_logs.lifecycle_pg"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**os.environ, **pg_home},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["now"] == [[1, "a"], [2, "B"], [3, "c"]]
    assert result["then"] == [[1, "a"], [2, "b"]]


def test_schema_init_is_idempotent_and_creates_lock_tables(
    pg_home: dict[str, str], postgres: PgServer
) -> None:
    # A second `up` while running is a no-op; the schematool schema has the lock tables.
    again = run_logberg(["local", "up"], pg_home)
    assert again.returncode == 0, again.stderr
    tables = subprocess.run(
        [
            "psql",
            "-h",
            "127.0.0.1",
            "-p",
            str(postgres.port),
            "-U",
            "postgres",
            "-d",
            "hms",
            "-At",
            "-c",
            "SELECT table_name FROM information_schema.tables",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # The ACID/lock tables are created unquoted by Hive's script, hence lower case.
    names = {t.upper() for t in tables}
    for needed in ("HIVE_LOCKS", "TXNS", "NEXT_LOCK_ID", "VERSION", "TBLS"):
        assert needed in names


def test_two_homes_run_side_by_side_and_down_stops_only_its_own(
    pg_home: dict[str, str], lakehouse_env: dict[str, str]
) -> None:
    a = run_logberg(["local", "status"], pg_home)
    b = run_logberg(["local", "status"], lakehouse_env)
    assert "hive-metastore  running" in a.stdout
    assert "hive-metastore  running" in b.stdout
    assert pg_home["LOGBERG_METASTORE_PORT"] in a.stdout
    assert lakehouse_env["LOGBERG_METASTORE_PORT"] in b.stdout


@pytest.mark.slow
def test_two_writers_commit_concurrently_without_loss(spark, tmp_path: Path) -> None:
    table = "nginx_logs.concurrent_writes"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(
        f"CREATE TABLE {table} (writer STRING, batch INT) USING iceberg "
        "TBLPROPERTIES ('commit.retry.num-retries'='50', 'commit.retry.min-wait-ms'='50')"
    )
    batches = 50
    run_side_by_side(
        {
            w: [sys.executable, "-m", "tests.helpers.append_batches", w, str(batches), table]
            for w in ("a", "b")
        },
        tmp_path,
    )
    rows = spark.sql(
        f"SELECT writer, batch, COUNT(*) AS n FROM {table} GROUP BY writer, batch"
    ).collect()
    assert len(rows) == 2 * batches
    assert all(r.n == 1 for r in rows)
    snapshots = spark.sql(f"SELECT COUNT(*) FROM {table}.snapshots").collect()[0][0]
    assert snapshots == 2 * batches


def test_logberg_sql_shell_and_query_cli(spark, lakehouse_env: dict[str, str]) -> None:
    spark.sql("CREATE TABLE IF NOT EXISTS nginx_logs.cli_probe (id INT, name STRING) USING iceberg")
    spark.sql("INSERT OVERWRITE nginx_logs.cli_probe VALUES (1, 'x'), (2, 'y')")
    shell = run_logberg(["sql", "-e", "SHOW TABLES IN nginx_logs"], lakehouse_env)
    assert shell.returncode == 0, shell.stderr[-2000:]
    assert "cli_probe" in shell.stdout
    plain = run_logberg(["sql", "-e", "USE nginx_logs; SHOW TABLES;"], lakehouse_env)
    assert "cli_probe" in plain.stdout
    q = run_logberg(
        ["query", "SELECT id, name FROM nginx_logs.cli_probe ORDER BY id", "--format", "jsonl"],
        lakehouse_env,
    )
    assert q.returncode == 0, q.stderr[-2000:]
    assert [json.loads(line) for line in q.stdout.splitlines()] == [
        {"id": 1, "name": "x"},
        {"id": 2, "name": "y"},
    ]
    csv_out = run_logberg(
        ["query", "SELECT id, name FROM nginx_logs.cli_probe ORDER BY id", "--format", "csv"],
        lakehouse_env,
    )
    assert csv_out.stdout.splitlines() == ["id,name", "1,x", "2,y"]


def test_s3_round_trip_text_and_iceberg_warehouse(spark) -> None:
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    client = s3server.boto3_client(settings)
    client.put_object(Bucket="logberg", Key="raw/probe/a.log", Body=b"one\ntwo\nthree\n")
    lines = [r.value for r in spark.read.text("s3a://logberg/raw/probe/").collect()]
    assert sorted(lines) == ["one", "three", "two"]

    spark.sql(
        "CREATE NAMESPACE IF NOT EXISTS s3_probe LOCATION 's3a://logberg/warehouse/s3_probe.db'"
    )
    spark.sql("DROP TABLE IF EXISTS s3_probe.t")
    spark.sql("CREATE TABLE s3_probe.t (id INT) USING iceberg")
    spark.sql("INSERT INTO s3_probe.t VALUES (1), (2), (3)")
    assert spark.sql("SELECT SUM(id) FROM s3_probe.t").collect()[0][0] == 6
    keys = [
        o["Key"]
        for o in client.list_objects_v2(Bucket="logberg", Prefix="warehouse/s3_probe.db/t/").get(
            "Contents", []
        )
    ]
    assert any(k.endswith(".parquet") for k in keys)
    assert any(k.endswith(".metadata.json") for k in keys)


def test_the_metastore_runs_on_the_class_archive_setup_recorded(
    lakehouse_env: dict[str, str],
) -> None:
    """`make setup` records the metastore's class archive; this home's running metastore
    maps it (JDK 17 unmaps an archive it cannot use, so /proc shows only one in use)."""
    from logberg_platform import metastore, setup_artifacts
    from logberg_platform.local_settings import LocalSettings

    s = LocalSettings.from_env()
    archive = setup_artifacts.metastore_cds_archive(s)
    assert archive.is_file(), f"{archive}: `make setup` (logberg setup cds) records it"
    pid = metastore.service(s).pid()
    assert pid is not None
    assert str(archive) in Path(f"/proc/{pid}/maps").read_text()


def test_metastore_down_or_wrong_port_fails_fast(lakehouse_env: dict[str, str]) -> None:
    # In-process: the session's own probe of the metastore. (With this home's Connect server
    # up, the command fails before it, on a server that serves another metastore.)
    env = {**lakehouse_env, "LOGBERG_METASTORE_PORT": str(free_port())}
    r = run_logberg(["query", "SELECT 1"], {**env, "LOGBERG_SPARK_MODE": "in-process"})
    assert r.returncode == 2
    assert "LOGBERG_METASTORE" in r.stderr
    assert "does not answer" in r.stderr


def test_missing_bucket_fails_fast(lakehouse_env: dict[str, str]) -> None:
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    env = {
        **lakehouse_env,
        **s3server.client_env(settings),
        "LOGBERG_WAREHOUSE": "s3a://no-such-bucket/warehouse",
        "LOGBERG_S3_ENDPOINT": settings.s3_endpoint,
    }
    r = run_logberg(["query", "SELECT 1"], env)
    assert r.returncode == 2
    assert "LOGBERG_WAREHOUSE" in r.stderr and "no-such-bucket" in r.stderr


def test_missing_java_fails_fast(lakehouse_env: dict[str, str], tmp_path: Path) -> None:
    env = {**lakehouse_env, "JAVA_HOME": str(tmp_path / "no-jdk")}
    r = run_logberg(["query", "SELECT 1"], env)
    assert r.returncode == 2
    assert "JAVA_HOME" in r.stderr


def test_port_in_use_names_the_setting(lakehouse_env: dict[str, str], tmp_path: Path) -> None:
    # Another home asking for the port the running metastore already holds.
    env = {**lakehouse_env, "LOGBERG_HOME": str(tmp_path / "other")}
    r = run_logberg(["local", "up"], env)
    assert r.returncode == 2
    assert "LOGBERG_METASTORE_PORT" in r.stderr


def test_wait_ready_returns_once_the_metastore_and_buckets_answer(
    lakehouse_env: dict[str, str],
) -> None:
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    s3 = {**s3server.client_env(settings), "LOGBERG_S3_ENDPOINT": settings.s3_endpoint}
    r = run_logberg(
        ["wait-ready", "--input", "s3a://logberg/landing", "--timeout", "60"],
        {**lakehouse_env, **s3},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ready after ") and "input s3a://logberg/landing" in r.stdout


def test_wait_ready_gives_up_naming_what_is_missing(lakehouse_env: dict[str, str]) -> None:
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    s3 = {**s3server.client_env(settings), "LOGBERG_S3_ENDPOINT": settings.s3_endpoint}
    # The metastore answers, but the landing bucket never appears.
    r = run_logberg(
        ["wait-ready", "--input", "s3a://no-such-landing/x", "--timeout", "3", "--interval", "1"],
        {**lakehouse_env, **s3},
    )
    assert r.returncode == 2
    assert "not ready after" in r.stderr and "--input" in r.stderr
    assert "no-such-landing" in r.stderr
    # A metastore that never answers: named by its setting, said once while waiting.
    r = run_logberg(
        ["wait-ready", "--timeout", "3", "--interval", "1"],
        {**lakehouse_env, "LOGBERG_METASTORE_PORT": str(free_port())},
    )
    assert r.returncode == 2
    assert "LOGBERG_METASTORE_URI" in r.stderr and "does not answer" in r.stderr
    assert r.stderr.count("waiting: ") == 1


def test_wait_ready_without_the_metastore_waits_for_the_buckets_only(
    lakehouse_env: dict[str, str],
) -> None:
    """The generator's: no metastore answers on its port, and it is ready once its bucket is."""
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    s3 = {**s3server.client_env(settings), "LOGBERG_S3_ENDPOINT": settings.s3_endpoint}
    env = {**lakehouse_env, **s3, "LOGBERG_METASTORE_PORT": str(free_port())}
    wait = ["wait-ready", "--no-metastore", "--timeout", "3", "--interval", "1"]
    r = run_logberg([*wait, "--input", "s3a://logberg/landing"], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("input s3a://logberg/landing"), r.stdout
    assert "metastore" not in r.stdout + r.stderr
    r = run_logberg([*wait, "--input", "s3a://no-such-landing/x"], env)
    assert r.returncode == 2 and "no-such-landing" in r.stderr, r.stderr


def test_wait_ready_writes_the_event_log_marker_or_waits_for_it(
    lakehouse_env: dict[str, str],
) -> None:
    """Drivers' init containers write `<prefix>/` (S3A's directory marker) when it is
    missing; the History Server's waits for it, the lakehouse unchecked."""
    import boto3

    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    settings = LocalSettings.from_env()
    s3 = {**s3server.client_env(settings), "LOGBERG_S3_ENDPOINT": settings.s3_endpoint}
    env = {**lakehouse_env, **s3}
    prefix = f"events-{uuid.uuid4().hex[:8]}"
    uri = f"s3a://logberg/{prefix}"
    wait = ["wait-ready", "--event-log-dir", uri, "--timeout", "2", "--interval", "1"]
    # The History Server's: read-only, and not the metastore (nothing answers on its port).
    r = run_logberg(
        [*wait, "--event-log-only"], {**env, "LOGBERG_METASTORE_PORT": str(free_port())}
    )
    assert r.returncode == 2
    assert f"--event-log-dir={uri}: no such prefix yet" in r.stderr
    assert "LOGBERG_METASTORE_URI" not in r.stderr
    # A driver's: writes the marker, once.
    for _ in range(2):
        r = run_logberg([*wait, "--create-event-log-dir"], env)
        assert r.returncode == 0, r.stderr
        assert f"event logs {uri}" in r.stdout and "metastore " in r.stdout
    client = boto3.client(
        "s3",
        endpoint_url=settings.s3_endpoint,
        aws_access_key_id=s3["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=s3["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    listed = client.list_objects_v2(Bucket="logberg", Prefix=f"{prefix}/")
    assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [(f"{prefix}/", 0)]
    r = run_logberg(
        [*wait, "--event-log-only"], {**env, "LOGBERG_METASTORE_PORT": str(free_port())}
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(f"event logs {uri}")
    # Wrong uses are named before anything is checked.
    r = run_logberg(["wait-ready", "--event-log-dir", "s3a://logberg"], env)
    assert r.returncode == 2 and "--event-log-dir=s3a://logberg: expected" in r.stderr
    r = run_logberg(["wait-ready", "--event-log-only"], env)
    assert r.returncode == 2 and "need --event-log-dir" in r.stderr
