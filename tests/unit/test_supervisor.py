"""The process supervisor (logberg_platform.supervisor) on real processes: pid file, log,
identity by marker and program, stop by recorded pid."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from logberg.errors import ServiceError
from logberg_platform.supervisor import Supervised, free_port, wait_for_port


def _process(tmp_path: Path, program: str | None = None) -> tuple[Supervised, list[str]]:
    marker = f"supervisor-test-{uuid.uuid4().hex}"
    # A Python that waits on its stdin-less pipe: it runs until signalled.
    argv = [sys.executable, "-c", "import signal; signal.pause()", marker]
    proc = Supervised("pauser", tmp_path / "run" / "p.pid", tmp_path / "logs" / "p.log", marker)
    if program is not None:
        proc = Supervised(proc.name, proc.pid_file, proc.log_file, marker, program)
    return proc, argv


def test_start_records_the_pid_and_stop_ends_only_that_process(tmp_path: Path) -> None:
    proc, argv = _process(tmp_path)
    assert proc.pid() is None and not proc.stop()
    popen = proc.start(argv)
    try:
        assert proc.pid() == popen.pid == int(proc.pid_file.read_text())
        assert proc.log_file.read_text().lstrip().startswith("==== ")
        assert proc.stop()
        popen.wait(timeout=30)  # gone (the supervisor reaped it: no exit code left here)
        assert proc.pid() is None and not proc.pid_file.exists()
    finally:
        popen.kill()
        popen.wait()


def test_a_pid_of_another_program_or_marker_is_not_ours(tmp_path: Path) -> None:
    proc, argv = _process(tmp_path, program="containerd")  # runs python, not containerd
    other = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        proc.pid_file.parent.mkdir(parents=True)
        proc.pid_file.write_text(f"{other.pid}\n")  # a reused pid: no marker
        assert proc.pid() is None
        assert not proc.stop()  # never signalled
        assert other.poll() is None
        popen = subprocess.Popen(argv)  # the marker, but not the named program
        proc.pid_file.write_text(f"{popen.pid}\n")
        assert proc.pid() is None
        popen.kill()
        popen.wait()
    finally:
        other.kill()
        other.wait()


def test_a_process_that_exits_fails_readiness_with_its_log(tmp_path: Path) -> None:
    proc, _ = _process(tmp_path)
    argv = [sys.executable, "-c", "print('bad config'); raise SystemExit(3)", proc.marker]
    popen = proc.start(argv)
    popen.wait()
    with pytest.raises(ServiceError, match="bad config"):
        wait_for_port(proc, popen, free_port(), timeout=60)
    with pytest.raises(ServiceError, match="exited during start-up"):
        proc.alive_or_fail()
