"""Run one command as a whole process: wall time, output, and peak memory of its process tree."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class ProcResult:
    cmd: list[str]
    returncode: int
    wall_s: float
    stdout: str
    stderr: str
    peak_tree_rss_mb: float  # max over samples of the summed RSS of the whole tree
    peak_proc_hwm_mb: float  # max VmHWM of any single process of the tree

    def check(self, what: str) -> ProcResult:
        if self.returncode != 0:
            tail = "\n".join((self.stdout + self.stderr).splitlines()[-30:])
            raise RuntimeError(f"{what} failed (exit {self.returncode}): {self.cmd}\n{tail}")
        return self


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
            except OSError:
                continue
            out.extend(int(c) for c in text.split())
    except OSError:
        pass
    return out


def tree(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(_children(p))
    return seen


def _mem_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in kB; (0, 0) when the process is gone."""
    rss = hwm = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, hwm


def tree_memory_mb(pid: int) -> dict[str, float | None]:
    """A running process tree's summed VmRSS and its highest VmHWM (its peak so far), MB."""
    mems = [_mem_kb(p) for p in tree(pid)]
    return {
        "rss_mb": round(sum(r for r, _ in mems) / 1024, 1),
        "hwm_mb": round(max((h for _, h in mems), default=0) / 1024, 1),
    }


class TreeMemory:
    """Polls /proc for a process and its descendants until stopped."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_sum_kb = 0
        self.peak_hwm_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        total = 0
        for p in tree(self.pid):
            rss, hwm = _mem_kb(p)
            total += rss
            self.peak_hwm_kb = max(self.peak_hwm_kb, hwm)
        self.peak_sum_kb = max(self.peak_sum_kb, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def kill_tree(pid: int) -> None:
    """SIGKILL a process and its descendants (children first)."""
    import signal

    for p in reversed(tree(pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def run(
    cmd: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 1800,
) -> ProcResult:
    """Run `cmd` to completion; stdout/stderr go to temp files (no pipe back-pressure)."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        with TreeMemory(proc.pid) as mem:
            try:
                rc = proc.wait(timeout=timeout)
            except BaseException as e:  # timeout or Ctrl-C: take the whole tree down
                kill_tree(proc.pid)
                rc = proc.wait()
                if not isinstance(e, subprocess.TimeoutExpired):
                    raise
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return ProcResult(
            cmd=cmd,
            returncode=rc,
            wall_s=wall,
            stdout=out.read(),
            stderr=err.read(),
            peak_tree_rss_mb=round(mem.peak_sum_kb / 1024, 1),
            peak_proc_hwm_mb=round(mem.peak_hwm_kb / 1024, 1),
        )
