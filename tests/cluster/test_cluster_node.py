"""The local single-node cluster (`logberg setup kubernetes`, `logberg cluster up`): the
node is Ready with the pinned version, a locally built image runs, `up` again changes
nothing, `status` names every component."""

from __future__ import annotations

import json
import re
import time

import pytest

from logberg_platform.cluster.lifecycle import ORDER
from tests.cluster.framework import (
    Cluster,
    _pins,
    run_pod,
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
