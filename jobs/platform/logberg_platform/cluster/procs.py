"""The cluster's processes: each with a pid file and a log under the cluster home.

A pid file alone is not trusted: the process must still run the same executable with a
command line that names the cluster home, so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ServiceError


@dataclass(frozen=True)
class Component:
    name: str
    argv: tuple[str, ...]
    run: Path  # pid files
    logs: Path
    marker: str  # text every command line of ours contains (the cluster home)

    @property
    def pid_file(self) -> Path:
        return self.run / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.logs / f"{self.name}.log"

    def pid(self) -> int | None:
        """The pid if the process we started still runs, else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        return pid if is_ours(pid, self.argv[0], self.marker) else None

    def start(self, env: dict[str, str] | None = None) -> int:
        self.run.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            log.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S')} start\n".encode())
            log.flush()
            proc = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env if env is not None else _clean_env(),
                start_new_session=True,
                cwd=self.run,
            )
        self.pid_file.write_text(f"{proc.pid}\n")
        # Until the child has exec'd, its command line is still ours (Python's).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if is_ours(proc.pid, self.argv[0], self.marker):
                break
            time.sleep(0.02)
        return proc.pid

    def stop(self, timeout: float = 20.0) -> bool:
        """SIGTERM, then SIGKILL after the timeout. True if it was running."""
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

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def is_ours(pid: int, executable: str, marker: str) -> bool:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        _reap(pid)
        return False
    name = Path(raw.split(b"\0")[0].decode(errors="replace")).name
    return name == Path(executable).name and marker.encode() in raw


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


def processes_with(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose command line contains marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in raw:
            found.append((int(entry.name), raw.replace(b"\0", b" ").decode(errors="replace")))
    mine = _ancestors()  # this process and what started it (a make line may name the home)
    return [(p, c) for p, c in found if p not in mine and _exists(p)]


def _ancestors() -> set[int]:
    """This process and its parents, up to init."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def _exists(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _clean_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return env


def run(argv: Sequence[str], timeout: float = 120, check: bool = True) -> str:
    """Run a short command; its stdout, or ServiceError with stderr when check fails."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise ServiceError(
            f"{' '.join(argv[:4])} failed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )
    return proc.stdout
