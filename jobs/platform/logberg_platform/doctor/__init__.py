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

from logberg_platform.doctor.diagnose import (
    add_arguments,
    diagnose,
    main,
    render_text,
    run,
    summary,
)
from logberg_platform.doctor.metastore_checks import LOCK_PROBE_TABLE
from logberg_platform.doctor.results import LOCK_TABLES, PASSWORD_ENV, CheckResult, Context, Status

__all__ = [
    "LOCK_PROBE_TABLE",
    "LOCK_TABLES",
    "PASSWORD_ENV",
    "CheckResult",
    "Context",
    "Status",
    "add_arguments",
    "diagnose",
    "main",
    "render_text",
    "run",
    "summary",
]
