"""What an interrupted earlier test run left on this machine, removed before a run starts.

A killed `make test` can leave the container tests' podman containers and network. The
next run then fails for reasons that have nothing to do with the code. Only leftovers whose
owner is provably gone are removed:

* podman containers and networks named `logberg-ctest-<pid>-…` whose pid is not a live
  pytest;
* aardvark-dns's pid file when that pid is no longer a running aardvark-dns (gone, reused,
  or a zombie): podman trusts the file, signals that pid instead of starting a name
  server, and container names stop resolving.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

CONTAINER_NAME = re.compile(r"logberg-ctest-(\d+)-")
AARDVARK_PID = Path("/run/containers/networks/aardvark-dns/aardvark.pid")

Log = Callable[[str], None]


def _is_running(pid: int, comm: str) -> bool:
    """pid runs the program `comm` (and is not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, _, rest = stat.partition("(")[2].rpartition(")")
    return name == comm and rest.split()[0] != "Z"


def _is_pytest(pid: int) -> bool:
    try:
        return b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def reap_containers(exe: str, env: dict[str, str], log: Log) -> None:
    def podman(*args: str) -> list[str]:
        proc = subprocess.run(
            [exe, *args], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        return proc.stdout.split()

    def stale(name: str) -> bool:
        m = CONTAINER_NAME.match(name)
        return m is not None and not _is_pytest(int(m.group(1)))

    containers = [n for n in podman("ps", "-a", "--format", "{{.Names}}") if stale(n)]
    if containers:
        podman("rm", "-f", "-t", "0", *containers)
        log(f"removed {len(containers)} containers of an earlier test run: {containers}")
    for net in podman("network", "ls", "--format", "{{.Name}}"):
        if stale(net):
            podman("network", "rm", "-f", net)
            log(f"removed the network {net} of an earlier test run")
    try:
        pid = int(AARDVARK_PID.read_text().strip())
    except (OSError, ValueError):
        return
    if not _is_running(pid, "aardvark-dns"):
        AARDVARK_PID.unlink(missing_ok=True)
        log(f"removed aardvark-dns's stale pid file (pid {pid} is not a running aardvark-dns)")


def reap(log: Log = print) -> None:
    """Remove what interrupted runs left; needs root (as podman's tests do)."""
    if os.geteuid() != 0:
        return
    from logberg.errors import ConfigError
    from logberg_platform.build import container_images as images

    try:
        b = images.builder()
    except ConfigError:
        return
    if b.kind == "podman":
        reap_containers(b.exe, dict(b.env), log)
