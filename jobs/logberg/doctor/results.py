"""What a check reports (ok, failed with the fix, skipped) and what the checks share."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Protocol

from logberg.lakehouse.session import LakehouseConfig

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


class Hints(Protocol):
    """What to tell a user where the environment knows more (the local platform: this
    home's metastore process and log, its S3 server's keys)."""

    def metastore_fix(self) -> str: ...

    def metastore_log(self) -> str: ...

    def s3_keys(self, endpoint: str | None) -> tuple[str, str] | None: ...


class ClusterHints:
    """In a cluster: the release's metastore, and the pod's own AWS credential chain."""

    def metastore_fix(self) -> str:
        return (
            "check the metastore's pods and Service (kubectl get pods,svc -l "
            "app.kubernetes.io/name=hive-metastore) and that LOGBERG_METASTORE_URI names it"
        )

    def metastore_log(self) -> str:
        return "kubectl logs deploy/hive-metastore"

    def s3_keys(self, endpoint: str | None) -> tuple[str, str] | None:
        return None


@dataclass
class Context:
    """What the checks share: the settings, the hints, and what earlier checks learned."""

    config: LakehouseConfig
    timeout: float = 10.0
    # In a cluster pod (LOGBERG_PROFILE=cluster) only the metastore holds its database's
    # credentials: the database checks are the chart's schema Job's and `helm test`'s.
    cluster: bool = False
    hints: Hints = field(default_factory=ClusterHints)
    databases: list[str] | None = None  # from the metastore, when it answered
