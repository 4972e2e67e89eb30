"""What a check reports (ok, failed with the fix, skipped) and what the checks share."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from logberg.lakehouse.session import LakehouseConfig
from logberg_platform.local_settings import LocalSettings

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
