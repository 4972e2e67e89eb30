"""What an interrupted earlier test run left on this machine, removed before a run starts.

A killed `make test` can leave a test cluster up (its bridge, routes, iptables rules and
mounts stay even after its processes die) and the container tests' podman containers and
network. The next run then fails for reasons that have nothing to do with the code. Only
leftovers whose owner is provably gone are removed:

* a test cluster home (/tmp/lbk-*, /tmp/lbk8s-*) with a host record older than
  MIN_AGE_S and no live process naming it: `logberg cluster down --purge` (which restores
  the host), then the folder. The age keeps a run that started at the same moment safe:
  its record is written just before its processes start;
* podman containers and networks named `logberg-ctest-<pid>-…` whose pid is not a live
  pytest;
* aardvark-dns's pid file when that pid is no longer a running aardvark-dns (gone, reused,
  or a zombie): podman trusts the file, signals that pid instead of starting a name
  server, and container names stop resolving.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from logberg_platform.supervisor import processes_with

REPO = Path(__file__).resolve().parents[2]
CLUSTER_HOMES = ("lbk-*", "lbk8s-*")  # the homes of tests/cluster/ (framework.py)
CONTAINER_NAME = re.compile(r"logberg-ctest-(\d+)-")
AARDVARK_PID = Path("/run/containers/networks/aardvark-dns/aardvark.pid")
MIN_AGE_S = 300.0

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


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return -1.0  # gone: not a leftover


def stale_cluster_homes(tmp: Path = Path("/tmp"), min_age_s: float = MIN_AGE_S) -> list[Path]:
    """Test cluster homes that changed the host (a record, at least `min_age_s` old) and
    have no live process."""
    homes = sorted(h for pattern in CLUSTER_HOMES for h in tmp.glob(pattern) if h.is_dir())
    return [
        h
        for h in homes
        if _age_s(h / "host-record.json") >= min_age_s
        and not processes_with(str(h.resolve()) + "/")
    ]


def reap_clusters(log: Log) -> None:
    for home in stale_cluster_homes():
        env = dict(os.environ, LOGBERG_CLUSTER_HOME=str(home))
        env.setdefault("LOGBERG_TOOLS", str(REPO / ".tools"))
        proc = subprocess.run(
            [sys.executable, "-m", "logberg.cli", "cluster", "down", "--purge"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=REPO,
        )
        if proc.returncode != 0:  # keep the folder: its record is what a retry needs
            log(f"could not take down the stale test cluster at {home}:\n{proc.stderr[-2000:]}")
            continue
        shutil.rmtree(home, ignore_errors=True)
        log(f"took down the stale test cluster left at {home}")


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
    """Remove what interrupted runs left; needs root (as the cluster and podman do)."""
    if os.geteuid() != 0:
        return
    if shutil.which("ip") is not None:
        reap_clusters(log)
    from logberg.errors import ConfigError
    from logberg_platform.build import container_images as images

    try:
        b = images.builder()
    except ConfigError:
        return
    if b.kind == "podman":
        reap_containers(b.exe, dict(b.env), log)
