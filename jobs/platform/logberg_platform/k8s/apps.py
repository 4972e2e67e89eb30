"""SparkApplications: follow one to its end and say how it ended, or a stream from a topic
until it has caught up."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logberg.errors import ConfigError, ServiceError
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


# -- a Kafka stream, until it has caught up with its topic ----------------------------------
DRIVER_CONTAINER = "spark-kubernetes-driver"
POSITION = "logberg.pipeline.kafka.position"


def stream_source(app: dict[str, Any]) -> tuple[str, str | None]:
    """(`--from` topic URI, `--checkpoint` or None) of an `ingest --from` application."""
    args = list((app.get("spec") or {}).get("arguments") or [])

    def value(flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args[:-1] else None

    uri = value("--from")
    if args[:1] != ["ingest"] or uri is None:
        name = (app.get("metadata") or {}).get("name")
        raise ConfigError(f"SparkApplication {name}: not a stream from a topic (ingest --from)")
    return uri, value("--checkpoint")


def wait_stream(kube: Kube, name: str, timeout: float, say: Say) -> dict[str, Any]:
    """Follow an `ingest --from` application until the lakehouse holds all its topic has:
    its last committed micro-batch ends where the topic ends (jobs/logberg/pipeline/kafka/
    position.py, run inside the driver pod, which reaches the broker and S3). A restarted
    driver is followed too (restartPolicy Always); the position is said when it changes."""
    from logberg_platform.k8s.api_client import exec_capture

    started = time.monotonic()
    last = ""
    while True:
        app = kube.app(name)
        if app is None:
            raise ServiceError(f"SparkApplication {name} does not exist in namespace {kube.ns}")
        uri, checkpoint = stream_source(app)
        st = AppState.of(app)
        line = st.line()
        if st.state == "RUNNING" and st.driver_pod:
            argv = ["python3", "-m", POSITION, uri, *([checkpoint] if checkpoint else [])]
            try:
                rc, out, err = exec_capture(
                    kube, st.driver_pod, DRIVER_CONTAINER, argv, timeout=120
                )
            except Exception as e:  # its container not started yet, or gone
                rc, out, err = 1, "", f"{type(e).__name__}: the driver does not answer yet"
            if rc == 0:
                pos = json.loads(out.strip().splitlines()[-1])
                line += f"; batch {pos['batch']}, {pos['behind']:,} message(s) behind"
                if pos["behind"] == 0:
                    say(f"{name}: {line}: caught up")
                    return dict(pos)
            else:
                line += f"; position unknown ({(err or out).strip().splitlines()[-1:]})"
        if line != last:
            say(f"{name}: {line}")
            last = line
        if time.monotonic() - started > timeout:
            raise ServiceError(f"SparkApplication {name}: timed out after {timeout:.0f}s in {line}")
        time.sleep(5.0)
