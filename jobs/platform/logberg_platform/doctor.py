"""`logberg doctor`: check each piece of the local platform's lakehouse and say what to fix.

In order: the metastore answers a real thrift call; its database is reachable (PostgreSQL,
through psycopg2; embedded Derby only through the metastore); the schema is the pinned
Hive's; the lock tables Iceberg's commit locks need exist, and the metastore takes and
releases such a lock; the warehouse takes a write, a read and a delete; every Iceberg table
of `nginx_logs` has its current metadata file. Each failure says what was found and names
the setting (or the table and file) to fix.

    python -m logberg_platform.doctor [--format text|json]

Exit 0 when no check failed (a skipped check is not a failure), 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from logberg.errors import ConfigError
from logberg.lakehouse.schema import DATABASE
from logberg.lakehouse.session import CATALOG, LakehouseConfig, is_s3
from logberg.lakehouse.thrift import HiveMetastoreClient, MetastoreError, ThriftError
from logberg.versions import pins
from logberg_platform.settings import LocalSettings, MetastoreDb

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

PASSWORD_ENV = "LOGBERG_METASTORE_DB_PASSWORD"
# Iceberg's HiveCatalog takes a metastore lock around every commit (lock, check_lock,
# heartbeat, unlock). In Hive 3.1 the metastore's TxnHandler keeps those locks in
# HIVE_LOCKS, numbered from NEXT_LOCK_ID, serialises lock checks on a row of AUX_TABLE, and
# heartbeats and times them out along with transactions (TXNS, TXN_COMPONENTS). schematool
# creates them; a schema made any other way (DataNucleus' autoCreateAll) lacks them, and then
# every Iceberg commit fails while plain reads work.
LOCK_TABLES = ("HIVE_LOCKS", "NEXT_LOCK_ID", "AUX_TABLE", "TXNS", "TXN_COMPONENTS")
PROBE_DIR = "_logberg_doctor"
IN_CLUSTER = (
    "in a cluster only the metastore holds its database's credentials: the chart's schema "
    "Job (schematool) and `helm test hive-metastore` check the database"
)


class Status(str, Enum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class CheckResult:
    """One check: what was checked, how it went, what was found, and what to do."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.status is Status.FAILED

    def to_dict(self) -> dict[str, str]:
        return {**asdict(self), "status": self.status.value}


def ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, Status.OK, detail)


def failed(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, Status.FAILED, detail, fix)


def skipped(name: str, detail: str) -> CheckResult:
    return CheckResult(name, Status.SKIPPED, detail)


@dataclass
class Context:
    """What the checks share: the settings, and what earlier checks learned."""

    settings: LocalSettings
    config: LakehouseConfig
    timeout: float = 10.0
    # In a cluster pod (LOGBERG_PROFILE=cluster) only the metastore holds its database's
    # credentials: the database checks are the chart's schema Job's and `helm test`'s.
    cluster: bool = False
    databases: list[str] | None = None  # from the metastore, when it answered
    db_conn: Any = None  # an open psycopg2 connection, when the database check passed


# ---- 1. the metastore --------------------------------------------------------------------


def _metastore_fix(ctx: Context) -> str:
    from logberg_platform import metastore

    s = ctx.settings
    svc = metastore.service(s)
    started = (
        f"this home's metastore runs (pid {svc.pid()}) but does not answer: see {svc.log_file}; "
        if svc.pid() is not None
        else ""
    )
    return (
        f"{started}start it with `logberg local up` (LOGBERG_HOME={s.home}), or point "
        "LOGBERG_METASTORE_URI (or LOGBERG_METASTORE_PORT, for this home's) at the metastore "
        "that runs"
    )


def check_metastore(ctx: Context) -> CheckResult:
    name = "metastore"
    uri = ctx.config.metastore_uri
    try:
        client = HiveMetastoreClient.from_uri(uri, ctx.timeout)
    except ValueError:
        return failed(
            name,
            f"LOGBERG_METASTORE_URI={uri!r} is not a thrift URI",
            "set LOGBERG_METASTORE_URI to thrift://host:port",
        )
    try:
        with client:
            dbs = client.get_all_databases()
    except ThriftError as e:
        return failed(
            name, f"the metastore at {uri} does not answer thrift ({e})", _metastore_fix(ctx)
        )
    except MetastoreError as e:
        from logberg_platform import metastore

        return failed(
            name,
            f"the metastore at {uri} answered get_all_databases with an error: {e}",
            "its database is the usual cause (see the database checks); the metastore's log: "
            f"{metastore.service(ctx.settings).log_file}",
        )
    ctx.databases = dbs
    return ok(name, f"{uri} answers get_all_databases: {', '.join(dbs) or '(none)'}")


# ---- 2. its database ----------------------------------------------------------------------


def _tcp_answers(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _db_setting(db: MetastoreDb) -> str:
    return f"LOGBERG_METASTORE_DB={db.label}"


def check_database(ctx: Context) -> CheckResult:
    name = "database"
    if ctx.cluster:
        return skipped(name, IN_CLUSTER)
    db = ctx.settings.metastore_db
    if db.kind == "derby":
        return skipped(
            name,
            f"embedded Derby under {ctx.settings.metastore_dir}: only the metastore opens it, "
            "so it is checked through the metastore (its schema version is verified when it "
            "starts)",
        )
    if not _tcp_answers(db.host, db.port, min(ctx.timeout, 5.0)):
        return failed(
            name,
            f"PostgreSQL at {db.host}:{db.port} does not answer",
            f"start PostgreSQL there, or correct the host and port in {_db_setting(db)}",
        )
    try:
        import psycopg2
    except ImportError:
        return failed(
            name,
            "psycopg2 is not installed, so the database cannot be checked",
            "install logberg's dependencies (pip install psycopg2-binary)",
        )
    password = os.environ.get(PASSWORD_ENV) or None
    try:
        conn = psycopg2.connect(
            host=db.host,
            port=db.port,
            dbname=db.database,
            user=db.user,
            password=password,
            connect_timeout=max(1, int(min(ctx.timeout, 10.0))),
            application_name="logberg-doctor",
        )
    except psycopg2.OperationalError as e:
        return _connect_failure(name, db, password is not None, str(e).strip())
    conn.set_session(readonly=True, autocommit=True)
    ctx.db_conn = conn
    return ok(name, f"{db.label}: connected as {db.user}")


def _connect_failure(name: str, db: MetastoreDb, have_password: bool, error: str) -> CheckResult:
    """Name the setting a failed PostgreSQL login points at, from libpq's message."""
    first = error.splitlines()[0] if error else "connection failed"
    low = error.lower()
    if "password authentication failed" in low or "authentication failed" in low:
        return failed(
            name,
            f"PostgreSQL refused the password of {db.user!r} on {db.host}:{db.port}: {first}",
            f"set {PASSWORD_ENV} to the password of {db.user!r}"
            + ("" if have_password else f" ({PASSWORD_ENV} is not set)"),
        )
    if "no password supplied" in low or "password is required" in low:
        return failed(
            name,
            f"PostgreSQL asks {db.user!r} for a password and none was given: {first}",
            f"set {PASSWORD_ENV} to the password of {db.user!r}",
        )
    if 'role "' in low and "does not exist" in low:
        return failed(
            name,
            f"PostgreSQL at {db.host}:{db.port} has no user {db.user!r}: {first}",
            f"create the user, or correct the user in {_db_setting(db)}",
        )
    if "database" in low and "does not exist" in low:
        return failed(
            name,
            f"PostgreSQL at {db.host}:{db.port} has no database {db.database!r}: {first}",
            f"create it (createdb {db.database}), or correct the database in {_db_setting(db)}",
        )
    return failed(
        name,
        f"cannot connect to {db.label}: {first}",
        f"check {_db_setting(db)} and {PASSWORD_ENV}",
    )


# ---- 3. the schema version ----------------------------------------------------------------


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def check_schema_version(ctx: Context) -> CheckResult:
    name = "schema version"
    if ctx.cluster:
        return skipped(name, IN_CLUSTER)
    db = ctx.settings.metastore_db
    hive = pins().hive
    want = _major_minor(hive)
    if db.kind == "derby":
        return skipped(
            name,
            "embedded Derby: the metastore verifies the schema version when it starts "
            "(metastore.schema.verification=true), so a running metastore has the right one",
        )
    if ctx.db_conn is None:
        return skipped(name, "the database could not be reached (see above)")
    import psycopg2

    try:
        with ctx.db_conn.cursor() as cur:
            cur.execute('SELECT "SCHEMA_VERSION" FROM "VERSION"')
            rows = [str(r[0]) for r in cur.fetchall()]
    except psycopg2.Error as e:
        if getattr(e, "pgcode", None) == "42P01":  # undefined_table
            return failed(
                name,
                f"{db.label} has no VERSION table: no metastore schema was ever created there",
                "`logberg local up` creates it with schematool -initSchema; or point "
                "LOGBERG_METASTORE_DB at the metastore's database",
            )
        return failed(
            name,
            f"cannot read VERSION in {db.label}: {str(e).strip().splitlines()[0]}",
            f"check that {db.user!r} may read the metastore's tables (LOGBERG_METASTORE_DB)",
        )
    if len(rows) != 1:
        return failed(
            name,
            f"VERSION in {db.label} has {len(rows)} rows ({', '.join(rows) or 'none'}), "
            "schematool writes exactly one",
            f"recreate the schema for Hive {hive} with schematool, or use a fresh database "
            "(LOGBERG_METASTORE_DB) and a fresh `logberg local up` home",
        )
    found = rows[0]
    if _major_minor(found) == want:
        return ok(name, f"{found} (Hive {hive})")
    newer = tuple(map(_int_or_zero, found.split("."))) > tuple(map(_int_or_zero, want.split(".")))
    fix = (
        f"a schema newer than Hive {hive}'s cannot be downgraded: point LOGBERG_METASTORE_DB "
        f"at a database for Hive {want} (a fresh `logberg local up` home creates one)"
        if newer
        else f"upgrade it to {want}.0 with schematool -dbType postgres -upgradeSchema "
        "(`logberg local down` then `logberg local up` runs it), or point "
        "LOGBERG_METASTORE_DB at a fresh database for a fresh `logberg local up` home"
    )
    return failed(
        name,
        f"{db.label} has schema version {found}, but the pinned Hive {hive} needs {want} "
        f"(schematool writes {want}.0)",
        fix,
    )


def _int_or_zero(part: str) -> int:
    return int(part) if part.isdigit() else 0


# ---- 4. the lock tables -------------------------------------------------------------------


def check_lock_tables(ctx: Context) -> CheckResult:
    name = "lock tables"
    if ctx.cluster:
        return skipped(name, IN_CLUSTER)
    db = ctx.settings.metastore_db
    if db.kind == "derby":
        return skipped(
            name,
            "embedded Derby opens in the metastore alone: the commit lock check takes a real lock",
        )
    if ctx.db_conn is None:
        return skipped(name, "the database could not be reached (see above)")
    # Hive's script creates the ACID tables unquoted (lower case in PostgreSQL) and the
    # others quoted (upper case): compare without case, in the schemas on the search path.
    with ctx.db_conn.cursor() as cur:
        cur.execute(
            "SELECT upper(tablename) FROM pg_catalog.pg_tables "
            "WHERE schemaname = ANY (current_schemas(false))"
        )
        present = {str(r[0]) for r in cur.fetchall()}
    missing = [t for t in LOCK_TABLES if t not in present]
    if missing:
        return failed(
            name,
            f"{db.label} lacks {', '.join(missing)}: Iceberg commits take metastore locks there, "
            "so every commit would fail",
            "recreate the schema with schematool -initSchema (on an empty database: point "
            "LOGBERG_METASTORE_DB at a fresh one and run `logberg local up`)",
        )
    return ok(name, f"{', '.join(LOCK_TABLES)} present")


# ---- 4b. a commit lock, taken and released ------------------------------------------------

LOCK_PROBE_TABLE = "logberg_doctor_lock_probe"


def _user() -> str:
    """The lock's owner as the metastore records it (a pod's uid may have no passwd entry)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid-{os.getuid()}"


def check_commit_lock(ctx: Context) -> CheckResult:
    """The metastore takes and releases the lock Iceberg takes around each commit (any
    database kind, in a cluster too): the lock tables exist and its TxnHandler works."""
    name = "commit lock"
    if ctx.databases is None:
        return skipped(name, "the metastore did not answer (see above)")
    uri = ctx.config.metastore_uri
    try:
        with HiveMetastoreClient.from_uri(uri, ctx.timeout) as client:
            lockid, state = client.lock("default", LOCK_PROBE_TABLE, _user(), socket.gethostname())
            client.unlock(lockid)
    except (ThriftError, MetastoreError) as e:
        return failed(
            name,
            f"the metastore at {uri} cannot take a table lock ({e}): every Iceberg commit "
            "would fail",
            "its lock tables (HIVE_LOCKS, NEXT_LOCK_ID, AUX_TABLE) are the usual cause: see the "
            "lock tables check and the metastore's log; schematool -initSchema creates them",
        )
    if state != "ACQUIRED":
        return failed(
            name,
            f"an exclusive lock on default.{LOCK_PROBE_TABLE} came back {state} (lock {lockid})",
            "another client holds it: run doctor again; if it stays, look for stale locks "
            "in HIVE_LOCKS",
        )
    return ok(name, f"lock {lockid} on default.{LOCK_PROBE_TABLE} acquired and released")


# ---- 5. the warehouse ---------------------------------------------------------------------


def _probe_body(token: str) -> bytes:
    return f"logberg doctor probe {token}\n".encode()


def check_warehouse(ctx: Context) -> CheckResult:
    name = "warehouse"
    uri = ctx.config.warehouse
    scheme = urlparse(uri).scheme
    if is_s3(uri):
        return _check_s3_warehouse(ctx, name, uri)
    if scheme != "file":
        if scheme == "hdfs":
            return skipped(name, f"{uri}: only file:// and s3a:// warehouses are checked")
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri!r} is not a file://, s3a:// or s3:// URI",
            "set LOGBERG_WAREHOUSE to file:///path or s3a://bucket/prefix",
        )
    root = Path(urlparse(uri).path)
    if not root.is_dir():
        return failed(
            name,
            f"{uri}: the directory {root} does not exist",
            "create it, or correct LOGBERG_WAREHOUSE (`logberg local up` creates this "
            "home's default warehouse)",
        )
    token = uuid.uuid4().hex
    probe = root / f".{PROBE_DIR}-{token}"
    body = _probe_body(token)
    try:
        probe.write_bytes(body)
        back = probe.read_bytes()
        probe.unlink()
    except OSError as e:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
        return failed(
            name,
            f"{uri}: cannot write, read and delete a file there ({e})",
            f"make {root} writable for this user, or correct LOGBERG_WAREHOUSE",
        )
    if back != body:
        return failed(
            name, f"{uri}: a file read back differs from what was written", "check the disk"
        )
    return ok(name, f"{uri}: wrote, read back and deleted a probe file")


def s3_client(ctx: Context) -> S3Client:
    """boto3 for the warehouse's S3: this home's S3 server with its own keys, else the
    endpoint (or AWS) with the standard credential chain."""
    import boto3
    from botocore.config import Config

    from logberg_platform import s3server

    cfg = ctx.config
    conf = Config(
        connect_timeout=min(ctx.timeout, 5.0),
        read_timeout=ctx.timeout,
        retries={"max_attempts": 1},
        s3={"addressing_style": "path" if cfg.s3_path_style else "virtual"},
    )
    kwargs: dict[str, Any] = {"config": conf}
    if cfg.s3_endpoint:
        kwargs["endpoint_url"] = cfg.s3_endpoint
    if cfg.s3_region:
        kwargs["region_name"] = cfg.s3_region
    s = ctx.settings
    if cfg.s3_endpoint == s.s3_endpoint and s3server.is_running(s):
        keys = s3server.credentials(s)
        kwargs["aws_access_key_id"] = keys["access_key"]
        kwargs["aws_secret_access_key"] = keys["secret_key"]
    return boto3.client("s3", **kwargs)


def _s3_failure(name: str, uri: str, endpoint: str | None, error: Exception) -> CheckResult:
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )

    where = endpoint or "AWS S3"
    bucket = urlparse(uri).netloc
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchBucket", "404", "NotFound"):
            return failed(
                name,
                f"LOGBERG_WAREHOUSE={uri}: bucket {bucket!r} does not exist at {where}",
                "create the bucket, or correct LOGBERG_WAREHOUSE",
            )
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return failed(
                name,
                f"LOGBERG_WAREHOUSE={uri}: {where} refused ({code})",
                "give these AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE) read, write and delete on the warehouse prefix",
            )
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri}: {where} answered {code}: {error}",
            "check LOGBERG_WAREHOUSE, LOGBERG_S3_ENDPOINT and the AWS credentials",
        )
    if isinstance(error, EndpointConnectionError):
        return failed(
            name,
            f"the S3 endpoint {where} does not answer ({error})",
            "start it (`logberg local up --s3` for this home's), or correct LOGBERG_S3_ENDPOINT",
        )
    if isinstance(error, NoCredentialsError):
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri}: no AWS credentials found",
            "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
        )
    return failed(
        name,
        f"LOGBERG_WAREHOUSE={uri}: {type(error).__name__}: {error}",
        "check LOGBERG_WAREHOUSE, LOGBERG_S3_ENDPOINT and the AWS credentials",
    )


def _check_s3_warehouse(ctx: Context, name: str, uri: str) -> CheckResult:
    from botocore.exceptions import BotoCoreError, ClientError

    parsed = urlparse(uri)
    bucket = parsed.netloc
    prefix = parsed.path.strip("/")
    token = uuid.uuid4().hex
    key = "/".join(p for p in (prefix, PROBE_DIR, f"{token}.probe") if p)
    body = _probe_body(token)
    client = s3_client(ctx)
    written = False
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body)
        written = True
        back = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        client.delete_object(Bucket=bucket, Key=key)
        written = False
    except (BotoCoreError, ClientError) as e:
        return _s3_failure(name, uri, ctx.config.s3_endpoint, e)
    finally:
        if written:  # a failed read or delete: try once more to leave nothing behind
            with contextlib.suppress(BotoCoreError, ClientError):
                client.delete_object(Bucket=bucket, Key=key)
    if back != body:
        return failed(
            name,
            f"{uri}: an object read back differs from what was written",
            f"check the S3 endpoint {ctx.config.s3_endpoint or 'AWS'}",
        )
    return ok(name, f"{uri}: wrote, read back and deleted s3://{bucket}/{key}")


# ---- 6. the Iceberg tables' metadata files -------------------------------------------------


def _metadata_exists(ctx: Context, location: str) -> bool:
    """Whether the file or object exists; raises OSError or boto errors if it cannot tell."""
    parsed = urlparse(location)
    if is_s3(location):
        from botocore.exceptions import ClientError

        try:
            s3_client(ctx).head_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
        except ClientError as e:
            if str(e.response.get("Error", {}).get("Code", "")) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True
    if parsed.scheme in ("file", ""):
        return Path(parsed.path).is_file()
    raise ValueError(f"cannot check a {parsed.scheme}:// file")


def check_tables(ctx: Context) -> list[CheckResult]:
    if ctx.databases is None:
        return [skipped("tables", "the metastore does not answer (see above)")]
    if DATABASE not in ctx.databases:
        return [
            skipped(
                "tables",
                f"no {DATABASE} database in the metastore yet (`logberg ingest` creates it)",
            )
        ]
    results: list[CheckResult] = []
    with HiveMetastoreClient.from_uri(ctx.config.metastore_uri, ctx.timeout) as client:
        try:
            tables = client.get_all_tables(DATABASE)
        except (ThriftError, MetastoreError) as e:
            return [
                failed("tables", f"get_all_tables({DATABASE}) failed: {e}", _metastore_fix(ctx))
            ]
        if not tables:
            return [ok("tables", f"{DATABASE} has no tables yet")]
        for table in sorted(tables):
            results.append(_check_table(ctx, client, table))
    return results


def _check_table(ctx: Context, client: HiveMetastoreClient, table: str) -> CheckResult:
    full = f"{DATABASE}.{table}"
    name = f"table {full}"
    try:
        params = client.get_table(DATABASE, table)
    except (ThriftError, MetastoreError) as e:
        return failed(name, f"get_table failed: {e}", "see the metastore's log")
    if params.get("table_type", "").upper() != "ICEBERG":
        return skipped(name, "not an Iceberg table")
    location = params.get("metadata_location", "")
    if not location:
        return failed(
            name,
            f"{full} is an Iceberg table without metadata_location in the metastore",
            f"drop it from the metastore (DROP TABLE {full}) and register its newest metadata "
            f"file: CALL {CATALOG}.system.register_table('{full}', '<...metadata.json>')",
        )
    try:
        exists = _metadata_exists(ctx, location)
    except Exception as e:  # a storage error other than "not found": say it, do not guess
        return failed(
            name,
            f"cannot check {full}'s current metadata file {location}: {e}",
            "check the warehouse (above) and its credentials",
        )
    if not exists:
        return failed(
            name,
            f"{full}: its current metadata file {location} is missing",
            f"restore {location}; else drop the table without PURGE (DROP TABLE {full}) and "
            f"register its newest remaining metadata file: CALL {CATALOG}.system."
            f"register_table('{full}', '<...metadata.json>')",
        )
    return ok(name, f"current metadata {location} exists")


# ---- running the checks -------------------------------------------------------------------


def _guard(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """A check that raises unexpectedly is a failed check, not a crashed doctor."""
    try:
        return check()
    except Exception as e:
        return failed(name, f"the check itself failed: {type(e).__name__}: {e}", "report this")


def diagnose(settings: LocalSettings | None = None, timeout: float = 10.0) -> list[CheckResult]:
    """Every check, in order, on this environment's settings (LOGBERG_* over the home's)."""
    from logberg_platform import local

    try:
        s = settings or LocalSettings.from_env()
        cfg = local.lakehouse_config(s)
    except ConfigError as e:
        return [failed("settings", str(e), "correct the setting named")]
    cluster = os.environ.get("LOGBERG_PROFILE") == "cluster"
    ctx = Context(settings=s, config=cfg, timeout=timeout, cluster=cluster)
    try:
        results = [
            _guard("metastore", lambda: check_metastore(ctx)),
            _guard("database", lambda: check_database(ctx)),
            _guard("schema version", lambda: check_schema_version(ctx)),
            _guard("lock tables", lambda: check_lock_tables(ctx)),
            _guard("commit lock", lambda: check_commit_lock(ctx)),
            _guard("warehouse", lambda: check_warehouse(ctx)),
        ]
        try:
            results += check_tables(ctx)
        except Exception as e:
            results.append(
                failed("tables", f"the check itself failed: {type(e).__name__}: {e}", "report this")
            )
    finally:
        if ctx.db_conn is not None:
            ctx.db_conn.close()
    return results


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    return {st.value: sum(r.status is st for r in results) for st in Status}


def render_text(results: Sequence[CheckResult]) -> Iterator[str]:
    width = max(len(r.name) for r in results)
    for r in results:
        status = r.status.value.upper() if r.failed else r.status.value
        line = f"{status:7} {r.name:{width}}  {r.detail}"
        yield line + (f"  -> fix: {r.fix}" if r.fix else "")
    counts = summary(results)
    verdict = "all checks passed" if not counts["failed"] else "some checks failed"
    yield (
        f"{len(results)} checks: {counts['ok']} ok, {counts['failed']} failed, "
        f"{counts['skipped']} skipped ({verdict})"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="one line per check and a summary (text), or one JSON document (json)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="for each network call (default 10)",
    )
    k = parser.add_argument_group("on a cluster (--k8s)")
    k.add_argument(
        "--k8s",
        action="store_true",
        help="check the release on a cluster: the operator and the metastore through the API, "
        "then these checks inside the release's toolbox pod",
    )
    k.add_argument("--context", default=os.environ.get("K8S_CONTEXT") or None)
    k.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None)
    k.add_argument("--namespace", default=os.environ.get("K8S_NAMESPACE", "logberg"))
    k.add_argument("--release", default="logberg")
    k.add_argument("--operator-release", default="spark-operator")


def on_cluster(args: argparse.Namespace) -> list[CheckResult]:
    """`--k8s`: the API's view, then `logberg doctor` in the toolbox pod."""
    from logberg_platform.k8s import health, submit
    from logberg_platform.k8s.kube import Kube, Target

    kube = Kube(Target(namespace=args.namespace, context=args.context, kubeconfig=args.kubeconfig))
    found = health.api_checks(kube, args.release, args.operator_release)
    try:
        found += health.inside(kube, submit.toolbox_pod(kube, args.release))
    except ConfigError as e:
        found.append({"name": "toolbox", "status": "failed", "detail": str(e), "fix": ""})
    return [CheckResult(r["name"], Status(r["status"]), r["detail"], r["fix"]) for r in found]


def run(args: argparse.Namespace) -> int:
    """Run every check and print the results; 0 when none failed, else 1."""
    results = on_cluster(args) if getattr(args, "k8s", False) else diagnose(timeout=args.timeout)
    if args.format == "json":
        doc = {
            "ok": not any(r.failed for r in results),
            "summary": summary(results),
            "checks": [r.to_dict() for r in results],
        }
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(render_text(results)))
    sys.stdout.flush()
    return 1 if any(r.failed for r in results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m logberg_platform.doctor",
        description="check the local lakehouse piece by piece and say what to fix",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
