"""`logberg doctor` against real parts: a Hive Metastore on a real PostgreSQL server that asks
for passwords, the local S3 server, and an Iceberg table made by Spark through the metastore.

One home (its metastore, S3 server and table) serves every case. A case that breaks the
metastore's database works on its own copy of it (pg_dump into a private database; the
doctor is pointed at the copy), so the shared database is never broken; the case that
deletes a metadata file puts it back and checks the doctor passes again. The doctor runs
through its real entry point, `python -m logberg.cli doctor`, as a child process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psycopg2
import pytest

from logberg.doctor.metastore_checks import LOCK_PROBE_TABLE
from logberg.lakehouse.thrift import HiveMetastoreClient
from logberg.versions import pins
from logberg_platform.doctor import LOCK_TABLES, PASSWORD_ENV
from logberg_platform.supervisor import free_port
from tests.conftest import HOME_ENV, REPO
from tests.integration.pg import PgServer, _bin

pytestmark = pytest.mark.integration

USER = "hive"
PASSWORD = "doctor-s3cret"
METASTORE_DB = "hms_doctor"
TABLE = "doctor_probe"
CHECKS = ("metastore", "database", "schema version", "lock tables", "commit lock", "warehouse")


@dataclass
class Doctor:
    returncode: int
    doc: dict[str, Any]
    stderr: str

    @property
    def checks(self) -> dict[str, dict[str, str]]:
        return {c["name"]: c for c in self.doc["checks"]}

    def status(self, name: str) -> str:
        return self.checks[name]["status"]

    def failed(self) -> list[str]:
        return [c["name"] for c in self.doc["checks"] if c["status"] == "failed"]


def child_env(env: dict[str, str | None]) -> dict[str, str]:
    """This process's environment without any home's settings, then `env` (None: unset)."""
    out = {k: v for k, v in os.environ.items() if k not in HOME_ENV and k != PASSWORD_ENV}
    for k, v in env.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def run(argv: list[str], env: dict[str, str | None], timeout: float = 600) -> Any:
    return subprocess.run(
        argv, env=child_env(env), capture_output=True, text=True, cwd=REPO, timeout=timeout
    )


def logberg(args: list[str], env: dict[str, str | None]) -> Any:
    return run([str(Path(sys.executable).parent / "logberg"), *args], env)


def doctor(env: dict[str, str | None], **overrides: str | None) -> Doctor:
    r = run(
        [sys.executable, "-m", "logberg.cli", "doctor", "--format", "json"],
        {**env, **overrides},
        timeout=180,
    )
    assert r.stdout.strip(), f"no output (exit {r.returncode}): {r.stderr[-2000:]}"
    return Doctor(r.returncode, json.loads(r.stdout), r.stderr)


def admin(pg: PgServer, sql: str, dbname: str = "postgres") -> list[tuple[Any, ...]]:
    """One statement as the server's superuser (trusted on loopback)."""
    conn = psycopg2.connect(host="127.0.0.1", port=pg.port, user=pg.user, dbname=dbname)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall()) if cur.description else []
    finally:
        conn.close()


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    """A PostgreSQL server where the metastore's user must give its password."""
    base = Path(tempfile.mkdtemp(prefix="logberg-doctor-pg-"))
    base.chmod(0o755)
    server = PgServer(datadir=base / "data", port=free_port())
    server.start()
    try:
        # The superuser stays trusted on loopback (the tests' admin); everyone else
        # authenticates with a password.
        (server.datadir / "pg_hba.conf").write_text(
            f"local all {server.user} trust\n"
            f"host all {server.user} 127.0.0.1/32 trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
        )
        admin(server, "SELECT pg_reload_conf()")
        admin(server, f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
        admin(server, f"CREATE DATABASE {METASTORE_DB} OWNER {USER}")
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def db_url(pg: PgServer, database: str) -> str:
    return f"postgresql://{USER}@127.0.0.1:{pg.port}/{database}"


@pytest.fixture(scope="module")
def home(pg: PgServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str | None]]:
    """A LOGBERG_HOME whose metastore runs on `pg` (with the password), with the local S3
    server, and an Iceberg table nginx_logs.doctor_probe made by spark-sql."""
    env: dict[str, str | None] = {
        "LOGBERG_HOME": str(tmp_path_factory.mktemp("doctor-home")),
        "LOGBERG_METASTORE_PORT": str(free_port()),
        "LOGBERG_S3_PORT": str(free_port()),
        "LOGBERG_CONNECT_PORT": str(free_port()),
        "LOGBERG_METASTORE_DB": db_url(pg, METASTORE_DB),
        PASSWORD_ENV: PASSWORD,
        "LOGBERG_SPARK_MASTER": "local[2]",
        "LOGBERG_SHUFFLE_PARTITIONS": "2",
        "LOGBERG_DRIVER_MEMORY": "1g",
    }
    up = logberg(["local", "up", "--s3"], env)
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        made = logberg(
            [
                "sql",
                "-e",
                f"CREATE DATABASE IF NOT EXISTS nginx_logs; "
                f"CREATE TABLE nginx_logs.{TABLE} (id INT) USING iceberg; "
                f"INSERT INTO nginx_logs.{TABLE} VALUES (1), (2);",
            ],
            env,
        )
        assert made.returncode == 0, made.stderr[-3000:]
        yield env
    finally:
        down = logberg(["local", "down"], env)
        assert down.returncode == 0, down.stderr


@pytest.fixture
def private_db(pg: PgServer, home: dict[str, str | None]) -> Iterator[Callable[[str], str]]:
    """Copies of the home's metastore database, owned by its user: name -> URL. Dropped
    after the test."""
    made: list[str] = []

    def copy(name: str) -> str:
        admin(pg, f"CREATE DATABASE {name} OWNER {USER}")
        made.append(name)
        host = ["-h", "127.0.0.1", "-p", str(pg.port)]
        dump = subprocess.run(
            [_bin("pg_dump"), *host, "-U", pg.user, "--no-owner", "--no-privileges", METASTORE_DB],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(
            [_bin("psql"), *host, "-U", USER, "-d", name, "-q", "-v", "ON_ERROR_STOP=1"],
            input=dump,
            capture_output=True,
            check=True,
            env={**os.environ, "PGPASSWORD": PASSWORD},
        )
        return db_url(pg, name)

    yield copy
    for name in made:
        admin(pg, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_healthy_metastore_on_postgres_passes_every_check(home: dict[str, str | None]) -> None:
    d = doctor(home)
    assert d.returncode == 0, d.doc
    assert d.doc["ok"] is True
    checks = d.checks
    assert set(CHECKS) < set(checks)
    assert all(c["status"] == "ok" for c in d.doc["checks"]), d.doc
    assert "nginx_logs" in checks["metastore"]["detail"]
    assert checks["schema version"]["detail"].startswith("3.1.0")
    assert all(t in checks["lock tables"]["detail"] for t in LOCK_TABLES)
    table = checks[f"table nginx_logs.{TABLE}"]
    assert table["detail"].endswith(".metadata.json exists")
    assert d.doc["summary"] == {"ok": len(checks), "failed": 0, "skipped": 0}

    # The text form: one line per check, then the summary.
    r = run([sys.executable, "-m", "logberg.cli", "doctor"], home)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(checks) + 1
    assert all(line.startswith("ok ") for line in lines[:-1])
    n = len(checks)
    assert lines[-1] == f"{n} checks: {n} ok, 0 failed, 0 skipped (all checks passed)"


def test_s3_warehouse_is_written_read_and_cleaned_and_a_missing_bucket_is_named(
    home: dict[str, str | None],
) -> None:
    import boto3

    s3 = {
        "LOGBERG_WAREHOUSE": "s3a://logberg/warehouse",
        "LOGBERG_S3_ENDPOINT": f"http://127.0.0.1:{home['LOGBERG_S3_PORT']}",
    }
    d = doctor(home, **s3)
    assert d.status("warehouse") == "ok", d.checks["warehouse"]
    assert "s3://logberg/warehouse/_logberg_doctor/" in d.checks["warehouse"]["detail"]
    keys = json.loads((Path(str(home["LOGBERG_HOME"])) / "s3" / "credentials.json").read_text())
    client = boto3.client(
        "s3",
        endpoint_url=s3["LOGBERG_S3_ENDPOINT"],
        aws_access_key_id=keys["access_key"],
        aws_secret_access_key=keys["secret_key"],
        region_name="us-east-1",
    )
    left = client.list_objects_v2(Bucket="logberg", Prefix="warehouse/_logberg_doctor/")
    assert left.get("KeyCount", 0) == 0  # the probe object was deleted

    d = doctor(home, **{**s3, "LOGBERG_WAREHOUSE": "s3a://no-such-bucket/warehouse"})
    assert d.returncode == 1
    assert d.failed() == ["warehouse"]
    check = d.checks["warehouse"]
    assert "LOGBERG_WAREHOUSE" in check["detail"] and "no-such-bucket" in check["detail"]
    assert "LOGBERG_WAREHOUSE" in check["fix"]


def test_wrong_or_missing_password_names_the_password_setting(home: dict[str, str | None]) -> None:
    for password in ("not-the-password", None):
        d = doctor(home, **{PASSWORD_ENV: password})
        assert d.returncode == 1
        assert d.failed() == ["database"], d.doc
        check = d.checks["database"]
        assert PASSWORD_ENV in check["fix"], check
        assert USER in check["detail"]
        # What needs the database is skipped; the rest still runs.
        assert d.status("schema version") == d.status("lock tables") == "skipped"
        assert d.status("metastore") == d.status("warehouse") == "ok"


def test_unreachable_database_and_metastore_name_their_settings(
    pg: PgServer, home: dict[str, str | None]
) -> None:
    nowhere = f"postgresql://{USER}@127.0.0.1:{free_port()}/{METASTORE_DB}"
    d = doctor(home, LOGBERG_METASTORE_DB=nowhere)
    assert d.failed() == ["database"]
    assert "does not answer" in d.checks["database"]["detail"]
    assert f"LOGBERG_METASTORE_DB={nowhere}" in d.checks["database"]["fix"]

    d = doctor(home, LOGBERG_METASTORE_PORT=str(free_port()))
    assert d.returncode == 1
    assert d.failed() == ["metastore"]
    fix = d.checks["metastore"]["fix"]
    assert "LOGBERG_METASTORE_URI" in fix and "LOGBERG_METASTORE_PORT" in fix
    assert "logberg local up" in fix
    assert d.status("tables") == "skipped"


def test_a_dropped_lock_table_is_named(
    pg: PgServer, home: dict[str, str | None], private_db: Callable[[str], str]
) -> None:
    url = private_db("doctor_locks")
    admin(pg, "DROP TABLE hive_locks", dbname="doctor_locks")
    d = doctor(home, LOGBERG_METASTORE_DB=url)
    assert d.returncode == 1
    assert d.failed() == ["lock tables"], d.doc
    detail = d.checks["lock tables"]["detail"]
    assert "lacks HIVE_LOCKS:" in detail and "doctor_locks" in detail
    assert "schematool" in d.checks["lock tables"]["fix"]
    assert d.status("schema version") == "ok"


def test_a_metastore_that_cannot_lock_fails_the_commit_lock_check(
    pg: PgServer, home: dict[str, str | None]
) -> None:
    # The running metastore's own lock table goes away (renamed back afterwards).
    admin(pg, "ALTER TABLE hive_locks RENAME TO hive_locks_away", dbname=METASTORE_DB)
    try:
        d = doctor(home)
    finally:
        admin(pg, "ALTER TABLE hive_locks_away RENAME TO hive_locks", dbname=METASTORE_DB)
    assert d.returncode == 1
    assert sorted(d.failed()) == ["commit lock", "lock tables"], d.doc
    assert "cannot take a table lock" in d.checks["commit lock"]["detail"]
    assert "schematool" in d.checks["commit lock"]["fix"]
    assert doctor(home).status("commit lock") == "ok"  # the same metastore, lock table back


def test_a_commit_lock_is_taken_and_released_on_embedded_derby(
    lakehouse_env: dict[str, str],
) -> None:
    env: dict[str, str | None] = dict(lakehouse_env)
    first, second = doctor(env), doctor(env)  # released: the second exclusive lock is granted
    for d in (first, second):
        assert d.status("commit lock") == "ok", d.doc
        assert "acquired and released" in d.checks["commit lock"]["detail"]
    assert first.checks["lock tables"]["status"] == "skipped"
    ids = [int(d.checks["commit lock"]["detail"].split()[1]) for d in (first, second)]
    assert ids[1] > ids[0]

    # A lock someone else holds on the probe table: the check says so, and passes once freed.
    port = int(lakehouse_env["LOGBERG_METASTORE_PORT"])
    with HiveMetastoreClient("127.0.0.1", port) as other:
        held, state = other.lock("default", LOCK_PROBE_TABLE, "someone", "elsewhere")
        assert state == "ACQUIRED"
        try:
            blocked = doctor(env)
        finally:
            other.unlock(held)
    assert blocked.failed() == ["commit lock"], blocked.doc
    assert "came back WAITING" in blocked.checks["commit lock"]["detail"]
    assert doctor(env).status("commit lock") == "ok"


def test_a_schema_of_another_hive_version_names_both_versions(
    pg: PgServer, home: dict[str, str | None], private_db: Callable[[str], str]
) -> None:
    url = private_db("doctor_version")
    admin(pg, """UPDATE "VERSION" SET "SCHEMA_VERSION"='2.3.0'""", dbname="doctor_version")
    d = doctor(home, LOGBERG_METASTORE_DB=url)
    assert d.returncode == 1
    assert d.failed() == ["schema version"], d.doc
    check = d.checks["schema version"]
    assert "schema version 2.3.0" in check["detail"]
    assert f"Hive {pins().hive} needs 3.1" in check["detail"]
    assert "schematool" in check["fix"] and "-upgradeSchema" in check["fix"]
    assert d.status("lock tables") == "ok"


def test_a_deleted_metadata_file_names_the_table_and_path(
    pg: PgServer, home: dict[str, str | None]
) -> None:
    # The metastore's own record of the table's current metadata file.
    rows = admin(
        pg,
        'SELECT p."PARAM_VALUE" FROM "TABLE_PARAMS" p '
        'JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        f"""WHERE d."NAME" = 'nginx_logs' AND t."TBL_NAME" = '{TABLE}' """
        """AND p."PARAM_KEY" = 'metadata_location'""",
        dbname=METASTORE_DB,
    )
    assert len(rows) == 1
    location = str(rows[0][0])
    path = Path(urlparse(location).path)
    kept = path.read_bytes()
    path.unlink()
    try:
        d = doctor(home)
        assert d.returncode == 1
        assert d.failed() == [f"table nginx_logs.{TABLE}"], d.doc
        check = d.checks[f"table nginx_logs.{TABLE}"]
        assert f"nginx_logs.{TABLE}" in check["detail"] and location in check["detail"]
        assert "missing" in check["detail"]
        assert location in check["fix"]
    finally:
        path.write_bytes(kept)
    assert doctor(home).returncode == 0
