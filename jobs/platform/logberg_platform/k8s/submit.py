"""`logberg k8s submit|status|logs|sql`: the jobs on a cluster, without kubectl.

`submit` reads the SparkApplication specs the installed logberg chart writes into its
`<release>-apps` ConfigMap (one source: the chart's own applications render the same
spec) and creates an application with a fresh name and the job's arguments plus the
user's. `--wait` follows it to its end; Ctrl-C asks whether to delete it.
"""

from __future__ import annotations

import datetime as dt
import secrets
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import yaml

from logberg.errors import ConfigError, ServiceError
from logberg_platform.k8s.api_client import (
    DONE_STATES,
    FAILED_STATES,
    GROUP,
    VERSION,
    Kube,
    exit_code,
)
from logberg_platform.k8s.apps import AppState

Say = Callable[[str], None]
# Command name -> the ConfigMap key (the chart's component).
JOBS = {
    "ingest": "ingest",
    "analytics": "analytics",
    "maintain": "maintenance",
    "generate": "generator",
    "report": "report",
}


def templates(kube: Kube, release: str) -> dict[str, dict[str, Any]]:
    """The chart's application specs, by command name."""
    from kubernetes.client.exceptions import ApiException

    name = f"{release}-apps"
    try:
        cm = kube.call("get configmaps", kube.core.read_namespaced_config_map, name, kube.ns)
    except ApiException as e:
        if e.status == 404:
            raise ConfigError(
                f"the logberg release {release!r} is not installed in namespace {kube.ns} "
                f"(no ConfigMap {name}): make k8s-deploy, or --release/--namespace"
            ) from None
        raise
    data = cm.data or {}
    return {
        cmd: yaml.safe_load(data[f"{key}.yaml"])
        for cmd, key in JOBS.items()
        if f"{key}.yaml" in data
    }


def unique_name(release: str, command: str, now: dt.datetime | None = None) -> str:
    """`<release>-<command>-<MMDD-HHMMSS>-<4 hex>`: a resubmission never meets the old
    driver pod (a driver pod is named after its application)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    name = f"{release}-{command}-{now:%m%d-%H%M%S}-{secrets.token_hex(2)}"
    if len(name) > 48:  # the driver Service adds ~20 characters; Services allow 63
        raise ConfigError(f"--release {release!r} is too long for an application name")
    return name


def application(
    template: dict[str, Any], release: str, command: str, args: Sequence[str], name: str
) -> dict[str, Any]:
    """The SparkApplication: the chart's spec, a name, and the job's arguments plus `args`."""
    spec = dict(template)
    spec["arguments"] = [*template["arguments"], *args]
    labels = {
        "app.kubernetes.io/name": "logberg",
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/component": JOBS[command],
        "app.kubernetes.io/part-of": "logberg",
        "logberg.io/submitted-by": "logberg-k8s",
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SparkApplication",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def create(kube: Kube, app: dict[str, Any]) -> None:
    kube.operator_call(
        "create",
        kube.custom.create_namespaced_custom_object,
        GROUP,
        VERSION,
        kube.ns,
        "sparkapplications",
        app,
        plural="sparkapplications",
    )


# -- following an application ---------------------------------------------------------------


class Display:
    """State changes: one rewritten line on a terminal, plain lines otherwise."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.tty = out.isatty()
        self.last = ""

    def show(self, line: str) -> None:
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.out.write("\r\x1b[2K" + line)
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def done(self) -> None:
        if self.tty and self.last:
            self.out.write("\n")
            self.out.flush()


@dataclass
class LogFollower:
    """Streams the driver's log to `out` once the driver runs (a thread)."""

    kube: Kube
    out: IO[str]
    pod: str | None = None
    thread: threading.Thread | None = None

    def start(self, pod: str) -> None:
        if self.thread is not None:
            return
        self.pod = pod
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.pod
        try:
            resp = self.kube.core.read_namespaced_pod_log(
                self.pod, self.kube.ns, container="spark-kubernetes-driver", follow=True,
                _preload_content=False,
            )  # fmt: skip
            for chunk in resp.stream(4096):
                self.out.write(chunk.decode(errors="replace"))
                self.out.flush()
        except Exception as e:  # the stream ends with the pod; say why if it broke early
            self.out.write(f"(driver log stream ended: {type(e).__name__})\n")


def follow(
    kube: Kube,
    name: str,
    timeout: float,
    out: IO[str] = sys.stdout,
    logs: bool = False,
    tail: int = 40,
) -> AppState:
    """Follow the application to COMPLETED (returned) or a failure (ServiceError with the
    operator's message and the driver log's last lines)."""
    display = Display(out)
    follower = LogFollower(kube, out) if logs else None
    started = time.monotonic()
    while True:
        app = kube.app(name)
        if app is None:
            raise ServiceError(f"SparkApplication {name} is gone from namespace {kube.ns}")
        st = AppState.of(app)
        if follower and st.driver_pod and st.state in ("RUNNING", *DONE_STATES, *FAILED_STATES):
            follower.start(st.driver_pod)
        if not follower:
            display.show(f"{name}: {st.line()}")
        if st.state in DONE_STATES:
            display.done()
            return st
        if st.state in FAILED_STATES:
            display.done()
            log = kube.pod_log(st.driver_pod, tail) if st.driver_pod else "(no driver pod)"
            raise ServiceError(
                f"SparkApplication {name} {st.state}: {st.error or 'no message'}\n"
                f"--- the driver log's last {tail} lines ({st.driver_pod}):\n{log}"
            )
        if time.monotonic() - started > timeout:
            display.done()
            raise ServiceError(f"SparkApplication {name}: timed out after {timeout:.0f}s")
        time.sleep(2.0)


def interrupted(kube: Kube, name: str, ask: Callable[[str], str], say: Say) -> None:
    """Ctrl-C while waiting: ask whether to delete the application (default: keep it)."""
    try:
        answer = ask(f"\ndelete SparkApplication {name}? [y/N] ").strip().lower()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    if answer in ("y", "yes"):
        kube.operator_call(
            "delete",
            kube.custom.delete_namespaced_custom_object,
            GROUP, VERSION, kube.ns, "sparkapplications", name,
            plural="sparkapplications",
        )  # fmt: skip
        say(f"SparkApplication {name}: deleted")
    else:
        say(f"SparkApplication {name}: left running (logberg k8s status; kubectl delete ...)")


# -- status and logs -------------------------------------------------------------------------


def status_rows(kube: Kube, now: dt.datetime | None = None) -> list[tuple[str, ...]]:
    """NAME, STATE, ATTEMPTS, START, DURATION, DRIVER for every application, newest first."""
    items = kube.operator_call(
        "list",
        kube.custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        kube.ns,
        "sparkapplications",
        plural="sparkapplications",
    )["items"]
    now = now or dt.datetime.now(dt.timezone.utc)
    rows = []
    for app in items:
        st = AppState.of(app)
        status = app.get("status") or {}
        start = _ts(status.get("lastSubmissionAttemptTime"))
        end = _ts(status.get("terminationTime")) or (now if start else None)
        duration = f"{(end - start).total_seconds():.0f}s" if start and end else "-"
        rows.append(
            (
                app["metadata"]["name"],
                st.state or "PENDING",
                str(st.attempts),
                start.strftime("%Y-%m-%d %H:%M:%S") if start else "-",
                duration,
                st.driver_pod or "-",
                app["metadata"].get("creationTimestamp", ""),
            )
        )
    rows.sort(key=lambda r: r[-1], reverse=True)
    return [r[:-1] for r in rows]


def _ts(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def pod_of(kube: Kube, app: str, executor: int | None) -> str:
    found = kube.app(app)
    if found is None:
        raise ConfigError(f"no SparkApplication {app} in namespace {kube.ns} (logberg k8s status)")
    if executor is None:
        pod = AppState.of(found).driver_pod
        if not pod:
            raise ServiceError(f"{app} has no driver pod yet")
        return pod
    pods = kube.call(
        "list pods",
        kube.core.list_namespaced_pod,
        kube.ns,
        label_selector=f"sparkoperator.k8s.io/app-name={app},spark-role=executor,spark-exec-id={executor}",
    ).items
    if not pods:
        raise ConfigError(f"{app} has no executor {executor} (executors go when the job ends)")
    return str(pods[0].metadata.name)


def stream_log(kube: Kube, pod: str, follow_: bool, out: IO[str]) -> None:
    resp = kube.pod_log_response(pod, follow=follow_)
    for chunk in resp.stream(4096):
        out.write(chunk.decode(errors="replace"))
        out.flush()


# -- spark-sql in the toolbox ----------------------------------------------------------------


def toolbox_pod(kube: Kube, release: str) -> str:
    pods = kube.call(
        "list pods",
        kube.core.list_namespaced_pod,
        kube.ns,
        label_selector=f"app.kubernetes.io/instance={release},app.kubernetes.io/component=toolbox",
    ).items
    running = [p for p in pods if p.status.phase == "Running"]
    if not running:
        raise ConfigError(
            f"no running toolbox pod of release {release!r} in namespace {kube.ns} "
            "(toolbox.enabled in the chart)"
        )
    return str(running[0].metadata.name)


def toolbox_exec(kube: Kube, pod: str, command: list[str], interactive: bool) -> Any:
    """An exec stream into the toolbox container (stdin and a TTY when interactive)."""
    from kubernetes.stream import stream

    return kube.call(
        "create pods/exec",
        stream,
        kube.core.connect_get_namespaced_pod_exec,
        pod,
        kube.ns,
        container="toolbox",
        command=command,
        stdin=interactive,
        stdout=True,
        stderr=True,
        tty=interactive,
        _preload_content=False,
    )


def sql_piped(kube: Kube, pod: str, statements: str, out: IO[str], err: IO[str]) -> int:
    """Run SQL read from a pipe (`spark-sql -S -e`); returns spark-sql's exit code."""
    command = ["spark-sql", "-S", "--hiveconf", "hive.cli.print.header=true", "-e", statements]
    return toolbox_piped(kube, pod, command, out, err)


def toolbox_piped(kube: Kube, pod: str, command: list[str], out: IO[str], err: IO[str]) -> int:
    """Run a command in the toolbox, its output streamed as it comes; its exit code."""
    ws = toolbox_exec(kube, pod, command, interactive=False)
    while ws.is_open():
        ws.update(timeout=1)
        if ws.peek_stdout():
            out.write(ws.read_stdout())
            out.flush()
        if ws.peek_stderr():
            err.write(ws.read_stderr())
            err.flush()
    ws.close()
    return exit_code(ws, err)


def sql_terminal(kube: Kube, pod: str) -> int:
    """An interactive spark-sql with a TTY: the terminal in raw mode, keys and output both
    ways, the window size passed on."""
    import json
    import os
    import select
    import shutil
    import termios
    import tty

    ws = toolbox_exec(kube, pod, ["spark-sql"], interactive=True)
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    size = shutil.get_terminal_size()
    ws.write_channel(4, json.dumps({"Width": size.columns, "Height": size.lines}))
    try:
        tty.setraw(fd)
        while ws.is_open():
            ws.update(timeout=0.1)
            if ws.peek_stdout():
                os.write(sys.stdout.fileno(), ws.read_stdout().encode())
            if ws.peek_stderr():
                os.write(sys.stdout.fileno(), ws.read_stderr().encode())
            ready, _, _ = select.select([fd], [], [], 0)
            if ready:
                data = os.read(fd, 1024)
                if not data:
                    break
                ws.write_stdin(data.decode(errors="replace"))
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        ws.close()
    return exit_code(ws, sys.stderr)
