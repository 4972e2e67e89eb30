"""Background service processes: pid files, logs, readiness and clean stops."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ServiceError


@dataclass(frozen=True)
class Service:
    """A process we started: its pid file, log file and a marker in its command line."""

    name: str
    pid_file: Path
    log_file: Path
    marker: str  # text our process's command line contains; guards against pid reuse

    def pid(self) -> int | None:
        """The pid if the process we started is still alive, else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return None
        return pid if self.marker in cmdline else None

    def start(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path
    ) -> subprocess.Popen[bytes]:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: `down` stops it and its children
            )
        self.pid_file.write_text(f"{proc.pid}\n")
        return proc

    def stop(self, timeout: float = 20.0) -> bool:
        """Stop the process we started (and only it). Returns True if one was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pid() is not None:
            _reap(pid)
            time.sleep(0.2)
        if self.pid() is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _reap(pid)
        self.pid_file.unlink(missing_ok=True)
        return True

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0


def wait_for_port(
    service: Service, proc: subprocess.Popen[bytes], port: int, timeout: float
) -> None:
    """Wait until the service answers on the port; fail early if it dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if proc.poll() is not None:
            raise ServiceError(
                f"{service.name} exited during start-up; see {service.log_file}:\n"
                f"{service.log_tail()}"
            )
        time.sleep(0.5)
    service.stop()
    raise ServiceError(
        f"{service.name} did not answer on port {port} within {timeout:.0f}s; "
        f"see {service.log_file}:\n{service.log_tail()}"
    )
