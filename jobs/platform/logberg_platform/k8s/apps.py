"""SparkApplications: follow one to its end and say how it ended."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logberg.errors import ServiceError
from logberg_platform.k8s.api_client import DONE_STATES, FAILED_STATES, Kube

Say = Callable[[str], None]


@dataclass(frozen=True)
class AppState:
    state: str  # "" until the operator has seen it
    attempts: int
    driver_pod: str | None
    executors: dict[str, str]  # executor pod -> state
    error: str | None

    @classmethod
    def of(cls, app: dict[str, Any]) -> AppState:
        status = app.get("status") or {}
        return cls(
            state=(status.get("applicationState") or {}).get("state", ""),
            attempts=int(status.get("submissionAttempts") or 0)
            + int(status.get("executionAttempts") or 0),
            driver_pod=(status.get("driverInfo") or {}).get("podName"),
            executors=dict(status.get("executorState") or {}),
            error=(status.get("applicationState") or {}).get("errorMessage"),
        )

    def line(self) -> str:
        running = sum(1 for s in self.executors.values() if s == "RUNNING")
        parts = [self.state or "PENDING"]
        if self.executors:
            parts.append(f"executors running {running}/{len(self.executors)}")
        if self.driver_pod:
            parts.append(f"driver {self.driver_pod}")
        return ", ".join(parts)


def wait_app(kube: Kube, name: str, timeout: float, say: Say, log_tail: int = 60) -> AppState:
    """Follow the application until COMPLETED (returned) or FAILED/SUBMISSION_FAILED
    (ServiceError with the operator's message and the driver log's last lines). Each
    change of state is said once."""
    started = time.monotonic()
    last = ""
    while True:
        app = kube.app(name)
        if app is None:
            raise ServiceError(f"SparkApplication {name} does not exist in namespace {kube.ns}")
        st = AppState.of(app)
        line = st.line()
        if line != last:
            say(f"{name}: {line}")
            last = line
        if st.state in DONE_STATES:
            return st
        if st.state in FAILED_STATES:
            tail = kube.pod_log(st.driver_pod, log_tail) if st.driver_pod else "(no driver pod)"
            raise ServiceError(
                f"SparkApplication {name} {st.state}: {st.error or 'no message'}\n"
                f"--- last lines of the driver log ({st.driver_pod}):\n{tail}"
            )
        if time.monotonic() - started > timeout:
            raise ServiceError(f"SparkApplication {name}: timed out after {timeout:.0f}s in {line}")
        time.sleep(2.0)
