"""The local single-node cluster (`logberg setup kubernetes`, `logberg cluster up`): the
node is Ready with the pinned version, a locally built image runs, `up` again changes
nothing, `status` names every component."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from logberg_platform.build.kubernetes_binaries import NETPOL_KEEP
from logberg_platform.cluster.binaries import cached_binaries
from logberg_platform.cluster.lifecycle import ORDER
from tests.cluster.framework import (
    Cluster,
    _pins,
    run_pod,
    tools,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_node_is_ready_with_the_pinned_version(cluster: Cluster) -> None:
    version = f"v{_pins()['version']}"
    node = json.loads(cluster.kubectl("get", "nodes", "-o", "json"))["items"]
    assert len(node) == 1
    ready = [c for c in node[0]["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"
    assert node[0]["status"]["nodeInfo"]["kubeletVersion"] == version
    server = json.loads(cluster.kubectl("version", "-o", "json"))["serverVersion"]
    assert server["gitVersion"] == version
    assert f"export KUBECONFIG={cluster.home / 'kubeconfig'}" in cluster.up_output


def test_pod_from_a_locally_built_image_runs_and_exits_zero(
    cluster: Cluster, probe_image: str
) -> None:
    status, log = run_pod(cluster, probe_image, ["sh", "-c", "test -r /probe.sh && echo ok"])
    assert status == "Succeeded", log
    assert "nonce=probe-" in log and log.strip().endswith("ok")


def test_up_again_is_idempotent(cluster: Cluster) -> None:
    pids = {p.name: p.read_text() for p in (cluster.home / "run").glob("*.pid")}
    assert set(pids) == {f"{name}.pid" for name in ORDER}
    started = time.monotonic()
    proc = cluster.cli("up")
    assert proc.returncode == 0, proc.stderr
    assert "already up" in proc.stdout
    assert {p.name: p.read_text() for p in (cluster.home / "run").glob("*.pid")} == pids
    print(f"second up: {time.monotonic() - started:.1f}s")


def test_status_names_every_component(cluster: Cluster) -> None:
    proc = cluster.cli("status")
    assert proc.returncode == 0, proc.stderr
    for name in ORDER:  # kube-network-policies among them
        assert re.search(rf"^\s+{name}\s+running\s+pid \d+", proc.stdout, re.M), proc.stdout
    assert "Ready" in proc.stdout and "coredns" in proc.stdout


def module_versions(binary: Path) -> dict[str, str]:
    """The modules a Go binary was built from, at the versions it used (a replacement's
    where replaced), from the build information Go writes into it."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = subprocess.run(
        [go, "version", "-m", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    versions: dict[str, str] = {}
    last = ""
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["dep"]:
            last = fields[1]
            versions[last] = fields[2]
        elif fields[:1] == ["=>"] and last:
            versions[last] = fields[2]
    return versions


def test_coredns_and_the_policy_enforcer_share_the_kubernetes_builds_modules(
    cluster: Cluster,
) -> None:
    """CoreDNS and kube-network-policies are built against the module versions of the
    Kubernetes build (kubernetes_binaries._align), so a cold machine compiles the Kubernetes
    client once: every module they share with kube-apiserver and kubelet is at their version
    (but those kept at their own, NETPOL_KEEP)."""
    built = cached_binaries(Path(tools()))
    assert built is not None
    kube = module_versions(built.kube_bin / "kube-apiserver") | module_versions(
        built.kube_bin / "kubelet"
    )
    assert kube["k8s.io/client-go"] == f"v0.{_pins()['version'].split('.', 1)[1]}"
    for binary, keep in ((built.coredns, ()), (built.netpol, NETPOL_KEEP)):
        own = module_versions(binary)
        shared = {m for m in own if m in kube and m not in keep}
        assert {"k8s.io/client-go", "k8s.io/api", "k8s.io/apimachinery"} <= shared, binary
        assert {m: own[m] for m in shared} == {m: kube[m] for m in shared}, binary
