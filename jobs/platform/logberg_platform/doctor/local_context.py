"""The local platform's side of `logberg doctor`: what the checks know here (this home's
settings, the metastore database's connection) and what to tell the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from logberg.doctor.results import Context
from logberg_platform.local_settings import LocalSettings

PASSWORD_ENV = "LOGBERG_METASTORE_DB_PASSWORD"
# Iceberg's HiveCatalog takes a metastore lock around every commit (lock, check_lock,
# heartbeat, unlock). In Hive 3.1 the metastore's TxnHandler keeps those locks in
# HIVE_LOCKS, numbered from NEXT_LOCK_ID, serialises lock checks on a row of AUX_TABLE, and
# heartbeats and times them out along with transactions (TXNS, TXN_COMPONENTS). schematool
# creates them; a schema made any other way (DataNucleus' autoCreateAll) lacks them, and then
# every Iceberg commit fails while plain reads work.
LOCK_TABLES = ("HIVE_LOCKS", "NEXT_LOCK_ID", "AUX_TABLE", "TXNS", "TXN_COMPONENTS")


class LocalHints:
    """This home's metastore process and log, and its S3 server's keys."""

    def __init__(self, settings: LocalSettings) -> None:
        self.settings = settings

    def metastore_fix(self) -> str:
        from logberg_platform import metastore

        s = self.settings
        svc = metastore.service(s)
        started = (
            f"this home's metastore runs (pid {svc.pid()}) but does not answer: see "
            f"{svc.log_file}; "
            if svc.pid() is not None
            else ""
        )
        return (
            f"{started}start it with `logberg local up` (LOGBERG_HOME={s.home}), or point "
            "LOGBERG_METASTORE_URI (or LOGBERG_METASTORE_PORT, for this home's) at the "
            "metastore that runs"
        )

    def metastore_log(self) -> str:
        from logberg_platform import metastore

        return str(metastore.service(self.settings).log_file)

    def s3_keys(self, endpoint: str | None) -> tuple[str, str] | None:
        from logberg_platform import s3server

        s = self.settings
        if endpoint != s.s3_endpoint or not s3server.is_running(s):
            return None
        keys = s3server.credentials(s)
        return keys["access_key"], keys["secret_key"]


@dataclass
class LocalContext(Context):
    """The runtime's context, with this home's settings and the database connection."""

    settings: LocalSettings = field(default_factory=LocalSettings.from_env)
    db_conn: Any = None  # an open psycopg2 connection, when the database check passed
