"""The metastore database's checks: reachable (PostgreSQL through psycopg2), the pinned
schema version, and the lock tables Iceberg's commit locks need."""

from __future__ import annotations

import os
import socket

from logberg.doctor.results import IN_CLUSTER, CheckResult, failed, ok, skipped
from logberg.versions import pins
from logberg_platform.doctor.local_context import LOCK_TABLES, PASSWORD_ENV
from logberg_platform.doctor.local_context import LocalContext as Context
from logberg_platform.local_settings import MetastoreDb

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
