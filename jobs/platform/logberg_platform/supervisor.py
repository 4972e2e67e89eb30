"""The platform's process supervisor: background processes with a pid file and a log each
(the local metastore, S3 server, Kafka broker, Spark Connect and History Servers), their
readiness, and clean stops by recorded pid; also short commands.

A pid file alone is not trusted: the process must still have the marker in its command
line (and, when a program is named, run that program), so a reused pid is never signalled.
"""

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
class Supervised:
    """A background process we start and stop: its pid file, its log file, and what tells
    it from any other process that may later get its pid."""

    name: str
    pid_file: Path
    log_file: Path
    marker: str  # text our process's command line contains
    program: str | None = None  # when given, the running executable's file name

    def pid(self) -> int | None:
        """The pid if the process we started still runs, else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if is_ours(pid, self.marker, self.program) else None

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start argv in its own session (so `stop` ends it and its children), its output
        appended to the log; env defaults to a clean one (PATH, HOME, locale), cwd to the
        pid file's folder. Returns once the child runs argv (has exec'd)."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            log.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} start\n".encode())
            log.flush()
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd or self.pid_file.parent,
                env=dict(env) if env is not None else clean_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file.write_text(f"{proc.pid}\n")
        # Until the child has exec'd, its command line is still ours (Python's).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if is_ours(proc.pid, self.marker, self.program):
                break
            time.sleep(0.02)
        return proc

    def stop(self, timeout: float = 20.0) -> bool:
        """Stop the process we started (and only it): SIGTERM to it and its process group,
        SIGKILL after the timeout. True if it was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        terminate(pid, timeout)
        self.pid_file.unlink(missing_ok=True)
        return True

    def alive_or_fail(self) -> None:
        """Raise with the log's tail if the process has exited."""
        if self.pid() is None:
            raise ServiceError(
                f"{self.name} exited during start-up; see {self.log_file}:\n{self.log_tail()}"
            )

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def is_ours(pid: int, marker: str, program: str | None = None) -> bool:
    """The process runs (is no zombie), its command line holds marker and, when program is
    given, its executable has that file name."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        _reap(pid)
        return False
    if program is not None:
        name = Path(raw.split(b"\0")[0].decode(errors="replace")).name
        if name != Path(program).name:
            return False
    return marker.encode() in raw


def terminate(pid: int, timeout: float) -> None:
    """Stop a process (and its process group) that we verified is ours."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not _exists(pid):
                return
            time.sleep(0.1)


# -- readiness ----------------------------------------------------------------------------------


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
    process: Supervised, proc: subprocess.Popen[bytes], port: int, timeout: float
) -> None:
    """Wait until the process answers on the port; fail early if it dies, and stop it if
    it does not answer in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if proc.poll() is not None:
            raise ServiceError(
                f"{process.name} exited during start-up; see {process.log_file}:\n"
                f"{process.log_tail()}"
            )
        time.sleep(0.5)
    process.stop()
    raise ServiceError(
        f"{process.name} did not answer on port {port} within {timeout:.0f}s; "
        f"see {process.log_file}:\n{process.log_tail()}"
    )


# -- process state ------------------------------------------------------------------------------


def _exists(pid: int) -> bool:
    """The process runs: not gone, and not a zombie. A multi-threaded process (a JVM)
    whose main thread has exited shows as a zombie while its other threads still run its
    shutdown (and hold its ports): it runs until its thread count is down to the leader."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] != "Z":
        return True
    return _threads(pid) > 1


def _threads(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def clean_env() -> dict[str, str]:
    """PATH, HOME and the locale of this process: what a started component inherits."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return env


# -- short commands -----------------------------------------------------------------------------


def run(argv: Sequence[str], timeout: float = 120, check: bool = True) -> str:
    """Run a short command; its stdout, or ServiceError with stderr when check fails."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise ServiceError(
            f"{' '.join(argv[:4])} failed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    return proc.stdout
