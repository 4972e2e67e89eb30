"""The images, run as containers on a private network (podman here; docker where it runs):
PostgreSQL (a test image on the same Debian base), the Hive Metastore image on it and an S3
server; the Spark image runs `logberg generate`, `ingest` and `analytics` through them into
an s3a:// warehouse, and this machine reads the tables back through the same metastore.
Also: the metastore's schema step is a no-op the second time, a wrong database password
fails fast and touches nothing, rotated credential files are picked up without a human, no
secret sits in any layer, every image runs as non-root, and the Spark image's Python, Java
and Spark are the pinned ones.

The network is `--internal`: containers reach each other (by name, from /etc/hosts) and
this machine reaches them (by address), but nothing in them reaches anywhere else. The
images are built first if their tags do not exist yet (`make test-images` does it before
pytest)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomllib

from logberg.lakehouse.thrift import HiveMetastoreClient, MetastoreError, ThriftError
from logberg_platform.build import container_images as images
from tests.conftest import TEST_JAVA_OPTIONS
from tests.containers.conftest import ALL_IMAGES, JOB_TIMEOUT, PREFIX, Engine

pytestmark = [pytest.mark.containers, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PINS = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())
BUCKET = "logberg"
WAREHOUSE = f"s3a://{BUCKET}/warehouse"
READY_TIMEOUT = 300.0  # generous bounds for real readiness on a loaded 2-core machine
SHIPPED = ("spark", "hive-metastore", "spark-operator")


def get_all_databases(host: str, port: int, timeout: float) -> list[str]:
    """get_all_databases over thrift, with the chart's probe (the runtime's thrift client)."""
    with HiveMetastoreClient(host, port, timeout) as client:
        return client.get_all_databases()


def wait_until(
    what: str, ready: Callable[[], bool], alive: Callable[[], bool], logs: Callable[[], str]
) -> None:
    """Poll real readiness (a port, a thrift call) within READY_TIMEOUT; fail at once if
    the container died."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if ready():
            return
        if not alive():
            raise AssertionError(f"{what}: the container exited:\n{logs()[-4000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready within {READY_TIMEOUT:.0f}s:\n{logs()[-4000:]}")


def tcp_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def thrift_answers(host: str, timeout: float = 10.0) -> bool:
    try:
        return "default" in get_all_databases(host, 9083, timeout)
    except (OSError, ThriftError, MetastoreError):
        return False


# ---------------------------------------------------------------------------- fixtures
@dataclass
class Postgres:
    engine: Engine
    name: str
    ip: str
    password: str  # of the `hive` role

    def psql(self, sql: str, db: str = "postgres") -> str:
        proc = self.engine.run(
            "exec", self.name, "/usr/local/lib/postgresql-bin/psql", "--host=/tmp",
            "--username=postgres", f"--dbname={db}", "--no-align", "--tuples-only",
            "--set=ON_ERROR_STOP=1", "--command", sql,
        )  # fmt: skip
        return proc.stdout.strip()

    def answers(self) -> bool:
        """The final server is up: it listens on TCP (the set-up server does not), and on
        its socket, which PostgreSQL opens just after its TCP port."""
        if not tcp_open(self.ip, 5432):
            return False
        try:
            return self.psql("SELECT 1") == "1"
        except AssertionError:
            return False

    def add_database(self, db: str, user: str, password: str) -> None:
        self.psql(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
        self.psql(f"CREATE DATABASE {db} OWNER {user}")

    def tables(self, db: str) -> int:
        sql = "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        return int(self.psql(sql, db))


def secret_dir(root: Path, values: Mapping[str, str]) -> Path:
    """Files as a mounted Kubernetes Secret has them: each key a symlink through ..data to
    a timestamped folder, replaced in one rename when the Secret changes."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    version = root / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{secrets.token_hex(4)}"
    version.mkdir()
    version.chmod(0o755)
    for key, value in values.items():
        (version / key).write_text(value)
        (version / key).chmod(0o644)
    old = (root / "..data").resolve() if (root / "..data").is_symlink() else None
    tmp = root / "..data_tmp"
    tmp.symlink_to(version.name)
    os.replace(tmp, root / "..data")
    for key in values:
        if not (root / key).is_symlink():
            (root / key).symlink_to(f"..data/{key}")
    if old is not None:
        shutil.rmtree(old)
    return root


@pytest.fixture(scope="session")
def secret_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("container-secrets")
    root.chmod(0o755)
    return root


@pytest.fixture(scope="session")
def postgres(engine: Engine, tags: dict[str, str], secret_root: Path) -> Postgres:
    password = secrets.token_urlsafe(18)
    creds = secret_dir(secret_root / "pg", {"password": password})
    name = engine.start(
        tags["dev-postgres"],
        name=f"{PREFIX}-pg",
        env={
            "APP_USER": "hive",
            "APP_DB": "metastore",
            "APP_PASSWORD_FILE": "/run/secrets/pg/password",
        },
        mounts={str(creds): "/run/secrets/pg:ro"},
    )
    pg = Postgres(engine, name, engine.ip(name), password)
    wait_until(
        "PostgreSQL",
        pg.answers,
        lambda: engine.running(name),
        lambda: engine.logs(name),
    )
    return pg


@dataclass
class S3:
    name: str
    ip: str
    keys: dict[str, str]

    @property
    def host_endpoint(self) -> str:
        return f"http://{self.ip}:7070"


@pytest.fixture(scope="session")
def s3(engine: Engine, tags: dict[str, str]) -> S3:
    keys = {"access": "lb" + secrets.token_hex(8), "secret": secrets.token_urlsafe(24)}
    name = engine.start(
        tags["dev-s3"],
        name=f"{PREFIX}-s3",
        secrets_env={
            "ROOT_ACCESS_KEY_ID": keys["access"],
            "ROOT_SECRET_ACCESS_KEY": keys["secret"],
        },
    )
    server = S3(name, engine.ip(name), keys)
    wait_until(
        "S3 server",
        lambda: tcp_open(server.ip, 7070),
        lambda: engine.running(name),
        lambda: engine.logs(name),
    )
    boto3_client(server).create_bucket(Bucket=BUCKET)
    return server


def boto3_client(s3: S3) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=s3.host_endpoint,
        aws_access_key_id=s3.keys["access"],
        aws_secret_access_key=s3.keys["secret"],
        region_name="us-east-1",
    )


def aws_env(s3: S3) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": s3.keys["access"], "AWS_SECRET_ACCESS_KEY": s3.keys["secret"]}


def site_template(folder: Path, pg: Postgres, db: str, s3: S3 | None) -> Path:
    """metastore-site.xml as the chart's ConfigMap holds it: no credentials."""
    props = {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{pg.name}:5432/{db}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "metastore.thrift.port": "9083",
        "metastore.warehouse.dir": WAREHOUSE,
        "metastore.schema.verification": "true",
        "datanucleus.schema.autoCreateAll": "false",
        "metastore.event.db.notification.api.auth": "false",
        "hive.metastore.event.db.notification.api.auth": "false",
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    }
    if s3:
        props |= {
            "fs.s3a.endpoint": f"http://{s3.name}:7070",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.endpoint.region": "us-east-1",
        }
    body = "".join(
        f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items()
    )
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    path = folder / "metastore-site.xml"
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
    path.chmod(0o644)
    return path


def metastore_args(template: Path, creds: Path, poll: int = 2) -> dict[str, Any]:
    """env and mounts of a metastore container: the template, the credential files."""
    return {
        "env": {
            "METASTORE_DB_USER_FILE": "/var/run/secrets/db/username",
            "METASTORE_DB_PASSWORD_FILE": "/var/run/secrets/db/password",
            "METASTORE_CREDENTIALS_POLL_SECONDS": str(poll),
            "METASTORE_STOP_TIMEOUT_SECONDS": "30",
            "AWS_REGION": "us-east-1",
            "HADOOP_HEAPSIZE": "512",
            # As tests/conftest.py's TEST_JAVA_OPTIONS: small data, C1 only.
            "METASTORE_EXTRA_JAVA_OPTS": TEST_JAVA_OPTIONS,
        },
        "mounts": {
            str(template): "/etc/hive-metastore/metastore-site.xml:ro",
            str(creds): "/var/run/secrets/db:ro",
        },
    }


@dataclass
class Metastore:
    name: str
    ip: str


def start_metastore(
    engine: Engine,
    image: str,
    name: str,
    template: Path,
    creds: Path,
    secrets_env: Mapping[str, str] | None = None,
) -> Metastore:
    engine.start(
        image, "all", name=name, secrets_env=secrets_env, **metastore_args(template, creds)
    )
    ms = Metastore(name, engine.ip(name))
    wait_until(
        "the metastore",
        lambda: thrift_answers(ms.ip),
        lambda: engine.running(name),
        lambda: engine.logs(name),
    )
    return ms


@pytest.fixture(scope="session")
def metastore(
    engine: Engine,
    tags: dict[str, str],
    postgres: Postgres,
    s3: S3,
    secret_root: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Metastore:
    creds = secret_dir(secret_root / "ms", {"username": "hive", "password": postgres.password})
    template = site_template(tmp_path_factory.mktemp("ms-site"), postgres, "metastore", s3)
    return start_metastore(
        engine, tags["hive-metastore"], f"{PREFIX}-ms", template, creds, aws_env(s3)
    )


# ------------------------------------------------------------------------------ tests
def spark_job(engine: Engine, image: str, ms: Metastore, s3: S3, step: str, *args: str) -> str:
    env = {
        "LOGBERG_METASTORE_URI": f"thrift://{ms.name}:9083",
        "LOGBERG_WAREHOUSE": WAREHOUSE,
        "LOGBERG_S3_ENDPOINT": f"http://{s3.name}:7070",
        "LOGBERG_SPARK_MASTER": "local[2]",
        "AWS_REGION": "us-east-1",
        # The driver's JVM (spark-submit's, after the entrypoint's class archive), as
        # tests/conftest.py's TEST_JAVA_OPTIONS.
        "SPARK_SUBMIT_OPTS": TEST_JAVA_OPTIONS,
    }
    proc = engine.once(
        image, "logberg", step, *args, name=f"{PREFIX}-{step}", env=env, secrets_env=aws_env(s3)
    )
    assert proc.returncode == 0, (
        f"logberg {step} in the Spark image:\n{proc.stdout[-3000:]}\n{causes(proc.stderr)}"
    )
    return proc.stdout


def causes(stderr: str, keep: int = 60) -> str:
    """A JVM's stderr without its stack frames: the exceptions and their causes."""
    lines = [
        line
        for line in stderr.splitlines()
        if not line.lstrip().startswith("at ") and not line.lstrip().startswith("... ")
    ]
    return "\n".join(lines[-keep:])


def manifest(s3: S3) -> dict[str, Any]:
    client = boto3_client(s3)
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="landing/raw/nginx/_manifests/")
    [key] = [o["Key"] for o in listed.get("Contents", [])]
    return dict(json.loads(client.get_object(Bucket=BUCKET, Key=key)["Body"].read()))


READ_BACK = """
SELECT 'day' AS kind, CAST(date AS STRING) AS day, CAST(NULL AS STRING) AS key,
       COUNT(*) AS n, 0 AS rank
  FROM nginx_logs.access_logs GROUP BY date
UNION ALL SELECT 'rejects', NULL, NULL, COUNT(*), 0 FROM nginx_logs.access_logs_rejects
UNION ALL SELECT 'ip', CAST(date AS STRING), ip_address, request_count, rank
  FROM nginx_logs.daily_top_ips
UNION ALL SELECT 'device', CAST(date AS STRING), device_type, request_count, 0
  FROM nginx_logs.daily_top_devices
"""


PACKAGE_DIGEST = """
import hashlib, pathlib, sys
import logberg, generator
h = hashlib.sha256()
for pkg in (logberg, generator):
    root = pathlib.Path(pkg.__file__).parent
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root.parent)).encode() + b"\\0" + f.read_bytes())
print(h.hexdigest())
"""


def test_the_spark_image_runs_the_package_as_it_is_in_the_repository(
    engine: Engine, tags: dict[str, str]
) -> None:
    """The image's installed logberg and generator are the repository's, file for file (a
    cached install layer once shipped an older package under a new tag)."""
    proc = engine.once(
        tags["spark"], "python3", "-c", PACKAGE_DIGEST, name=f"{PREFIX}-package", timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    here = subprocess.run(
        [sys.executable, "-c", PACKAGE_DIGEST],
        env={**os.environ, "PYTHONPATH": f"{REPO / 'jobs'}:{REPO}"},
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    assert proc.stdout.strip() == here.stdout.strip()


def test_generate_ingest_analytics_in_the_spark_image(
    engine: Engine, tags: dict[str, str], metastore: Metastore, s3: S3, tmp_path: Path
) -> None:
    image = tags["spark"]
    spark_job(
        engine, image, metastore, s3, "generate",
        "--output", f"s3://{BUCKET}/landing", "--endpoint-url", f"http://{s3.name}:7070",
        "--num-files", "3", "--lines-per-file", "4000", "--start-date", "2025-01-06",
        "--end-date", "2025-01-08", "--seed", "20261123", "--malformed-rate", "0.01", "--quiet",
    )  # fmt: skip
    out = spark_job(engine, image, metastore, s3, "ingest", "--input", f"s3a://{BUCKET}/landing")
    truth = manifest(s3)
    assert f"lines_read={truth['totals']['lines']}" in out, out
    spark_job(engine, image, metastore, s3, "analytics")

    # Read the tables back from this machine, through the same metastore and S3.
    env = {
        **os.environ,
        **aws_env(s3),
        "LOGBERG_HOME": str(tmp_path / "home"),
        "LOGBERG_METASTORE_URI": f"thrift://{metastore.ip}:9083",
        "LOGBERG_WAREHOUSE": WAREHOUSE,
        "LOGBERG_S3_ENDPOINT": s3.host_endpoint,
        "LOGBERG_SPARK_MASTER": "local[2]",
        "LOGBERG_DRIVER_MEMORY": "1g",
        "AWS_REGION": "us-east-1",
    }
    logberg = str(Path(sys.executable).parent / "logberg")
    proc = subprocess.run(
        [logberg, "query", READ_BACK, "--format", "jsonl"],
        env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r)
    assert {r["day"]: r["n"] for r in by_kind["day"]} == {
        d: v["valid"] for d, v in truth["days"].items()
    }
    assert sum(r["n"] for r in by_kind["day"]) == truth["totals"]["valid"]
    assert [r["n"] for r in by_kind["rejects"]] == [truth["totals"]["malformed_total"]]
    assert truth["totals"]["malformed_total"] > 0
    for day, expected in truth["days"].items():
        ips = sorted((r for r in by_kind["ip"] if r["day"] == day), key=lambda r: r["rank"])
        assert [[r["key"], r["n"]] for r in ips] == expected["top_ips"][:10], day
        devices = {r["key"]: r["n"] for r in by_kind["device"] if r["day"] == day}
        assert devices == {k: v for k, v in expected["device_types"].items() if v}, day


def test_schema_step_is_a_no_op_the_second_time(
    engine: Engine, tags: dict[str, str], postgres: Postgres, secret_root: Path, tmp_path: Path
) -> None:
    password = secrets.token_urlsafe(18)
    postgres.add_database("metastore_twice", "hive_twice", password)
    creds = secret_dir(secret_root / "twice", {"username": "hive_twice", "password": password})
    template = site_template(tmp_path, postgres, "metastore_twice", None)
    runs, dumps = [], []
    for n in (1, 2):
        runs.append(
            engine.once(
                tags["hive-metastore"],
                "schema",
                name=f"{PREFIX}-twice-{n}",
                **metastore_args(template, creds),
                timeout=READY_TIMEOUT,
            )
        )
        dump = engine.run(
            "exec", postgres.name, "/usr/local/lib/postgresql-bin/pg_dump", "--host=/tmp",
            "--username=postgres", "--schema-only", "metastore_twice",
        ).stdout  # fmt: skip
        # pg_dump wraps its output in \restrict/\unrestrict with a new random key each run.
        dumps.append(re.sub(r"(?m)^\\(un)?restrict .*$", "", dump))
    first, second = runs
    assert first.returncode == 0, first.stderr[-3000:]
    assert second.returncode == 0, second.stderr[-3000:]
    assert "schema initialised" in first.stderr
    assert "is current: nothing to do" in second.stderr
    assert "initialising" not in second.stderr and "upgrading" not in second.stderr
    assert postgres.tables("metastore_twice") > 50
    assert dumps[0] == dumps[1], "the second run changed the database"
    assert postgres.psql('SELECT "SCHEMA_VERSION" FROM "VERSION"', "metastore_twice") == "3.1.0"
    for run in runs:
        assert password not in run.stdout + run.stderr


def test_a_wrong_password_fails_fast_and_touches_nothing(
    engine: Engine, tags: dict[str, str], postgres: Postgres, secret_root: Path, tmp_path: Path
) -> None:
    postgres.add_database("metastore_wrong", "hive_wrong", secrets.token_urlsafe(18))
    wrong = secrets.token_urlsafe(18)
    creds = secret_dir(secret_root / "wrong", {"username": "hive_wrong", "password": wrong})
    template = site_template(tmp_path, postgres, "metastore_wrong", None)
    proc = engine.once(
        tags["hive-metastore"],
        "all",
        name=f"{PREFIX}-wrong",
        **metastore_args(template, creds),
        timeout=READY_TIMEOUT,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "METASTORE_DB_PASSWORD_FILE" in proc.stderr
    assert "password authentication failed" in proc.stderr
    assert wrong not in proc.stdout + proc.stderr
    assert "starting the metastore" not in proc.stderr
    assert postgres.tables("metastore_wrong") == 0, "half-initialised"


def test_rotated_credentials_are_picked_up_without_a_human(
    engine: Engine, tags: dict[str, str], postgres: Postgres, secret_root: Path, tmp_path: Path
) -> None:
    """RDS rotates the master password; External Secrets updates the Secret; kubelet swaps
    the mounted files. The metastore must serve again on its own."""
    old, new = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
    postgres.add_database("metastore_rotate", "hive_rotate", old)
    creds = secret_dir(secret_root / "rotate", {"username": "hive_rotate", "password": old})
    template = site_template(tmp_path, postgres, "metastore_rotate", None)
    ms = start_metastore(engine, tags["hive-metastore"], f"{PREFIX}-rotate", template, creds)

    # The database changes first (rotation), and its open sessions end (a pool recycles
    # its connections; here at once): the running metastore can no longer connect.
    postgres.psql(f"ALTER ROLE hive_rotate PASSWORD '{new}'")
    postgres.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'hive_rotate'"
    )
    assert not thrift_answers(ms.ip, timeout=20), "the old password still works"

    secret_dir(secret_root / "rotate", {"username": "hive_rotate", "password": new})
    wait_until(
        "the metastore after the rotation",
        lambda: thrift_answers(ms.ip),
        lambda: engine.running(ms.name),
        lambda: engine.logs(ms.name),
    )
    logs = engine.logs(ms.name)
    assert "the database credentials changed" in logs
    assert "restarting the metastore" in logs
    assert logs.count("starting the metastore on port 9083") == 2
    assert old not in logs and new not in logs
    engine.remove(ms.name)


# ------------------------------------------------------------------- the images themselves
def test_images_run_as_non_root(engine: Engine, tags: dict[str, str]) -> None:
    for key in ALL_IMAGES:
        proc = engine.run(
            "run", "--rm", "--network", engine.network, "--entrypoint", "id", tags[key], "-u"
        )
        assert proc.stdout.strip() not in ("", "0"), key
        user = engine.builder.inspect(tags[key])["Config"]["User"]
        assert user and not user.startswith(("0", "root")), (key, user)


def test_spark_image_versions_are_the_pins(engine: Engine, tags: dict[str, str]) -> None:
    probe = (
        "import importlib.metadata as m, platform, pyspark;"
        "print(platform.python_version());"
        "print(pyspark.__version__);"
        "print(sum(1 for d in m.distributions() if d.metadata['Name'].lower() == 'pyspark'))"
    )
    out = engine.run(
        "run", "--rm", "--network", engine.network, tags["spark"], "python3", "-c", probe
    ).stdout.split()
    python, pyspark_version, copies = out
    assert python.rsplit(".", 1)[0] == PINS["base"]["python"]
    assert pyspark_version == PINS["spark"]["version"] and copies == "1"
    java = engine.run("run", "--rm", "--network", engine.network, tags["spark"], "java", "-version")
    assert re.search(rf'version "{PINS["base"]["java"]}\.', java.stderr), java.stderr
    submit = engine.run(
        "run", "--rm", "--network", engine.network, tags["spark"], "spark-submit", "--version"
    )
    assert f"version {PINS['spark']['version']}" in submit.stdout + submit.stderr
    python_bin = engine.run(
        "run",
        "--rm",
        "--network",
        engine.network,
        tags["spark"],
        "readlink",
        "-f",
        "/opt/logberg/venv/bin/python3",
    )
    assert python_bin.stdout.strip().startswith("/usr/bin/python3"), "Debian's python3"


def test_operator_image_is_the_pinned_controller_with_spark(
    engine: Engine, tags: dict[str, str]
) -> None:
    version = engine.run(
        "run", "--rm", "--network", engine.network, tags["spark-operator"], "version", "--short"
    )
    assert PINS["kubernetes"]["spark_operator"] in version.stdout, version.stdout
    # The spark-submit the controller runs, in the environment its entrypoint gives it (the
    # image's entrypoint up to the controller binary): on the Spark image's class archive.
    [*entrypoint, controller] = json.loads(
        engine.run("inspect", "-f", "{{json .Config.Entrypoint}}", tags["spark-operator"]).stdout
    )
    assert controller == "/usr/bin/spark-operator"
    submit = engine.run(
        "run", "--rm", "--network", engine.network, "--entrypoint", json.dumps(entrypoint),
        "-e", "SPARK_SUBMIT_OPTS=-Xlog:class+load=info",
        tags["spark-operator"], "spark-submit", "--version",
    )  # fmt: skip
    assert f"version {PINS['spark']['version']}" in submit.stdout + submit.stderr
    assert from_class_archive(submit.stdout + submit.stderr) > 1000


def test_spark_entrypoint_runs_a_driver(engine: Engine, tags: dict[str, str]) -> None:
    """The `driver` contract of Spark's Kubernetes backend: spark-submit in client mode
    on the pod's address. A local master stands in for the cluster."""
    proc = engine.once(
        tags["spark"],
        "driver", "--master", "local[1]", "--conf", "spark.ui.enabled=false",
        "--class", "org.apache.spark.deploy.PythonRunner",
        "local:///opt/logberg/spark_entry.py", "--help",
        name=f"{PREFIX}-driver",
        env={"SPARK_DRIVER_BIND_ADDRESS": "0.0.0.0"},
        timeout=READY_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "usage: logberg" in proc.stdout
    missing = engine.once(
        tags["spark"], "driver", "--version", name=f"{PREFIX}-nodriver", timeout=READY_TIMEOUT
    )
    assert missing.returncode == 2 and "SPARK_DRIVER_BIND_ADDRESS" in missing.stderr


def test_spark_entrypoint_starts_an_executor(engine: Engine, tags: dict[str, str]) -> None:
    """The `executor` contract: everything in SPARK_* variables. With no driver to talk
    to, the executor backend starts with the given memory and options, then fails to
    connect (a wrong argument would end in its usage text instead)."""
    env = {
        "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@127.0.0.1:7078",
        "SPARK_EXECUTOR_ID": "1",
        "SPARK_EXECUTOR_CORES": "1",
        "SPARK_EXECUTOR_MEMORY": "512m",
        "SPARK_APPLICATION_ID": "spark-application-1",
        "SPARK_EXECUTOR_POD_IP": "127.0.0.1",
        "SPARK_JAVA_OPT_0": "-XX:+PrintCommandLineFlags",
        "SPARK_JAVA_OPT_1": "-Dspark.network.timeout=10s",
        "SPARK_JAVA_OPT_2": "-Xlog:class+load=info",
    }
    proc = engine.once(
        tags["spark"], "executor", name=f"{PREFIX}-executor", env=env, timeout=READY_TIMEOUT
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "MaxHeapSize=536870912" in out and "+PrintCommandLineFlags" in out
    assert "Failed to connect to /127.0.0.1:7078" in out
    assert "Usage:" not in out
    # Its class path starts as the archive's did: Spark's classes come out of it.
    assert from_class_archive(out) > 1000, out[-3000:]


def from_class_archive(jvm_output: str) -> int:
    """How many classes a JVM run with -Xlog:class+load took from the image's class archive
    (the dynamic archive on top of the JDK's: "shared objects file (top)")."""
    return jvm_output.count("source: shared objects file (top)")


@pytest.mark.parametrize(
    ("conf_files", "mapped"),
    [
        ({}, True),  # docker run of a command: nothing in Spark's conf folder
        ({"spark.properties": "spark.app.name=x\n"}, True),  # a Kubernetes driver's mount
        ({"log4j2.properties": "rootLogger.level = warn\n"}, False),  # the conf folder first
    ],
    ids=["empty-conf", "spark-properties", "log4j2-properties"],
)
def test_spark_jvms_start_on_the_images_class_archive(
    engine: Engine, tags: dict[str, str], tmp_path: Path, conf_files: dict[str, str], mapped: bool
) -> None:
    """The image build dumps the classes of a small Spark run into an archive; the
    entrypoint starts spark-submit so that JDK 17 maps it (an empty folder, then Spark's jars
    first on the class path), with Spark's conf folder after the jars. A conf folder that
    holds more than spark.properties stays first, as Spark's scripts put it, without the
    archive; the JVM starts all the same."""
    conf = tmp_path / "conf"
    conf.mkdir()
    conf.chmod(0o755)
    for name, text in conf_files.items():
        (conf / name).write_text(text)
        (conf / name).chmod(0o644)
    proc = engine.once(
        tags["spark"], "spark-submit", "--version",
        name=f"{PREFIX}-cds", mounts={str(conf): "/opt/spark/conf:ro"},
        env={"SPARK_SUBMIT_OPTS": "-Xlog:class+load=info", "SPARK_PRINT_LAUNCH_COMMAND": "1"},
        timeout=READY_TIMEOUT,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "version 4." in out
    command = next(line for line in out.splitlines() if line.startswith("Spark Command:"))
    class_path = command.split(" -cp ", 1)[1].split(" ", 1)[0].split(":")
    if mapped:
        assert from_class_archive(out) > 1000, out[-3000:]
        assert class_path[0] == "/opt/logberg/cds/conf/"
        assert class_path.index("/opt/spark/conf/") > class_path.index("/opt/spark/jars/*")
    else:
        assert from_class_archive(out) == 0
        assert class_path[0] == "/opt/spark/conf/"


# ------------------------------------------------------------------ images for a node
@pytest.fixture()
def containerd(tmp_path: Path) -> Iterator[Path]:
    """A private containerd (its own root, state and socket; no CRI), as a node has."""
    binary = shutil.which("containerd")
    if binary is None or shutil.which("ctr") is None:
        pytest.skip("containerd and ctr are not installed (apt-get install containerd)")
    sock = tmp_path / "containerd.sock"
    config = tmp_path / "config.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{tmp_path / "root"}"\nstate = "{tmp_path / "state"}"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{sock}"\n[ttrpc]\n  address = "{tmp_path / "ttrpc.sock"}"\n'
    )
    with open(tmp_path / "containerd.log", "wb") as log:
        proc = subprocess.Popen([binary, "--config", str(config)], stdout=log, stderr=log)
    try:
        wait_until(
            "containerd",
            lambda: (
                subprocess.run(["ctr", "-a", str(sock), "version"], capture_output=True).returncode
                == 0
            ),
            lambda: proc.poll() is None,
            lambda: (tmp_path / "containerd.log").read_text(errors="replace"),
        )
        yield sock
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_saved_images_import_into_containerd(
    engine: Engine, tags: dict[str, str], containerd: Path, tmp_path: Path
) -> None:
    """`save` writes one archive that `ctr -n k8s.io images import` takes, under the names a
    pod's `image: <name>:<tag>` resolves to (docker.io/library/...)."""
    archive = tmp_path / "images.tar"
    images.save(["dev-s3", "dev-postgres"], archive)
    expected = {f"docker.io/library/{tags[k]}" for k in ("dev-s3", "dev-postgres")}
    ctr = ["ctr", "-a", str(containerd), "-n", "k8s.io"]
    done = subprocess.run(
        [*ctr, "images", "import", str(archive)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [*ctr, "images", "ls", "-q"], capture_output=True, text=True
    ).stdout.split()
    assert expected <= set(listed), listed
    assert not [
        n
        for n in engine.run("images", "--format", "{{.Repository}}").stdout.split()
        if n.startswith("docker.io/library/logberg")
    ], "save leaves no extra names behind"


# ------------------------------------------------------------------------ no secrets
SECRET_FILES = re.compile(
    r"(^|/)(\.pgpass|\.netrc|\.git-credentials|\.aws/credentials|\.docker/config\.json|"
    r"\.m2/settings(-security)?\.xml|id_(rsa|ed25519|ecdsa))$"
)
# A PEM private key with its body, an AWS access key id or secret key (AWS's documented
# examples, which end in EXAMPLE and fill the SDKs' docs, are not keys).
SECRET_TEXT = re.compile(
    rb"-----BEGIN [A-Z ]*PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]{60}|"
    rb"AKIA(?![0-9A-Z]{9}EXAMPLE)[0-9A-Z]{16}(?![0-9A-Z])|"
    rb"aws_secret_access_key\s*=\s*['\"]?(?![A-Za-z0-9/+]*EXAMPLE)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
)
SECRET_ENV = re.compile(r"(?i)(password|passwd|secret|token|access_key)[A-Z_]*=\S")
BINARY_SUFFIXES = (".jar", ".so", ".class", ".pyc", ".gz", ".zip", ".jsa", ".a")


def secret_findings(engine: Engine, image: str, tmp: Path) -> list[str]:
    """What `docker history` and the layers show: commands, env and labels, and, in every
    layer (also files a later layer deletes), secret-looking files and contents."""
    archive = tmp / "image.tar"
    engine.run("save", "-o", str(archive), image, timeout=1200)
    found: list[str] = []
    with tarfile.open(archive) as outer:
        [entry] = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(outer.extractfile(entry["Config"]))  # type: ignore[arg-type]
        for step in config.get("history", []):
            if SECRET_ENV.search(step.get("created_by", "")):
                found.append(f"history: {step['created_by'][:160]}")
        for var in config.get("config", {}).get("Env") or []:
            if SECRET_ENV.search(var):
                found.append(f"env: {var.split('=')[0]}")
        for key, value in (config.get("config", {}).get("Labels") or {}).items():
            if SECRET_ENV.search(f"{key}={value}"):
                found.append(f"label: {key}")
        for layer_name in entry["Layers"]:
            layer = outer.extractfile(layer_name)
            assert layer is not None
            with tarfile.open(fileobj=layer, mode="r|*") as inner:
                for member in inner:
                    if SECRET_FILES.search(member.name):
                        found.append(f"{layer_name[:19]}: {member.name}")
                    if (
                        member.isfile()
                        and 0 < member.size < 256_000
                        and not member.name.endswith(BINARY_SUFFIXES)
                    ):
                        data = inner.extractfile(member)
                        if data is not None and SECRET_TEXT.search(data.read()):
                            found.append(f"{layer_name[:19]}: {member.name} (content)")
    archive.unlink()
    return found


def test_no_secret_in_any_layer_or_env(
    engine: Engine, tags: dict[str, str], tmp_path: Path
) -> None:
    for key in SHIPPED:
        assert secret_findings(engine, tags[key], tmp_path) == [], key


def test_the_secret_check_finds_a_deleted_secret(
    engine: Engine, tags: dict[str, str], tmp_path: Path
) -> None:
    """The check above can fail: a key written in one layer and deleted in the next, and a
    token in the environment, are both reported."""
    context = tmp_path / "leaky"
    context.mkdir()
    fake_key = "AKIA" + "".join(
        secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16)
    )
    (context / "Dockerfile").write_text(
        f"FROM {tags['dev-s3']}\n"
        "USER root\n"
        "RUN mkdir -p /root/.aws && printf '[default]\\naws_access_key_id = "
        f"{fake_key}\\n' > /root/.aws/credentials\n"
        "RUN rm -rf /root/.aws\n"
        "ENV API_TOKEN=not-a-real-token\n"
    )
    tag = f"{PREFIX}-leaky:1"
    engine.run("build", "-t", tag, str(context), timeout=600)
    try:
        found = secret_findings(engine, tag, tmp_path)
    finally:
        engine.run("rmi", "-f", tag, check=False)
    assert any(".aws/credentials" in f and "(content)" not in f for f in found), found
    assert any(".aws/credentials (content)" in f for f in found), found
    assert "env: API_TOKEN" in found, found


def test_a_dead_runs_leftovers_are_removed_and_a_live_runs_kept(
    engine: Engine, tags: dict[str, str]
) -> None:
    from tests.helpers.leftovers import reap_containers

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs, as a killed run's would be
    stale, mine = f"logberg-ctest-{dead.pid}-x", f"{PREFIX}-keep"
    engine.run("network", "create", "--internal", f"{stale}net")
    engine.run("create", "--name", stale, "--network", f"{stale}net", tags["dev-postgres"])
    engine.run("create", "--name", mine, "--network", engine.network, tags["dev-postgres"])
    said: list[str] = []
    try:
        reap_containers(engine.builder.exe, dict(engine.builder.env), said.append)
        names = engine.run("ps", "-a", "--format", "{{.Names}}").stdout.split()
        networks = engine.run("network", "ls", "--format", "{{.Name}}").stdout.split()
    finally:
        engine.remove(mine)
        engine.remove(stale)
        engine.run("network", "rm", "-f", f"{stale}net", check=False)
    assert stale not in names and f"{stale}net" not in networks, said
    assert mine in names and engine.network in networks
    assert any(stale in line for line in said)
