"""The metastore's checks: a real thrift call, and a commit lock taken and released."""

from __future__ import annotations

import getpass
import os
import socket

from logberg.doctor.results import CheckResult, Context, failed, ok, skipped
from logberg.lakehouse.thrift import HiveMetastoreClient, MetastoreError, ThriftError

# ---- 1. the metastore --------------------------------------------------------------------


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
            name, f"the metastore at {uri} does not answer thrift ({e})", ctx.hints.metastore_fix()
        )
    except MetastoreError as e:
        return failed(
            name,
            f"the metastore at {uri} answered get_all_databases with an error: {e}",
            "its database is the usual cause (see the database checks); the metastore's log: "
            f"{ctx.hints.metastore_log()}",
        )
    ctx.databases = dbs
    return ok(name, f"{uri} answers get_all_databases: {', '.join(dbs) or '(none)'}")


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
