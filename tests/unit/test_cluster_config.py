"""The local cluster's settings fail fast, naming the setting, before anything is built or
started. No cluster needed (the taken-port case needs root to get past the preflight)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def cluster_cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, LOGBERG_CLUSTER_HOME=str(tmp_path / "cluster"), **env)
    return subprocess.run(
        [sys.executable, "-m", "logberg.cli", "cluster", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("LOGBERG_CLUSTER_POD_CIDR", "10.244.0.0/28"),
        ("LOGBERG_CLUSTER_POD_CIDR", "8.8.0.0/16"),
        ("LOGBERG_CLUSTER_SERVICE_CIDR", "not-a-cidr"),
        ("LOGBERG_CLUSTER_SERVICE_CIDR", "10.244.0.0/16"),  # overlaps the pod range
        ("LOGBERG_CLUSTER_API_PORT", "70000"),
        ("LOGBERG_CLUSTER_ETCD_PORT", "x"),
        ("LOGBERG_CLUSTER_BRIDGE", "Bad-Name"),
        ("LOGBERG_CLUSTER_NODE", "Not_A_Label"),
    ],
)
def test_a_bad_setting_fails_fast_and_names_itself(
    tmp_path: Path, setting: str, value: str
) -> None:
    proc = cluster_cli(tmp_path, "up", **{setting: value})
    assert proc.returncode == 2
    assert setting in proc.stderr, proc.stderr
    assert not (tmp_path / "cluster").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the preflight before the port check needs root")
def test_a_taken_apiserver_port_fails_fast_and_names_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = cluster_cli(
            tmp_path,
            "up",
            LOGBERG_CLUSTER_API_PORT=str(port),
            LOGBERG_CLUSTER_BRIDGE=f"lbp{os.getpid() % 100000}",  # not a running cluster's
        )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"port {port}" in proc.stderr and "LOGBERG_CLUSTER_API_PORT" in proc.stderr
    assert not (tmp_path / "cluster" / "host-record.json").exists()
    assert "starting" not in proc.stdout


def test_one_kubernetes_minor_for_the_cluster_and_kind() -> None:
    import tomllib

    k8s = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())["kubernetes"]
    minor = ".".join(k8s["version"].split(".")[:2])
    tag = k8s["kind_node_image"].split(":", 1)[1].split("@")[0]
    assert tag.startswith(f"v{minor}."), (tag, minor)
    assert "@sha256:" in k8s["kind_node_image"], "pin the kind node image by digest"
    # The cluster's kubectl is `make tools`' (its wheel's name carries its minor).
    wheel = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())["tools"]
    assert wheel["kubectl_wheel"].split("==")[0].endswith(f"-v{minor.split('.')[1]}")


def test_the_clusters_kubectl_is_the_one_make_tools_installs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from logberg_platform.cluster import binaries as b
    from logberg_platform.cluster.cluster_settings import ClusterSettings
    from logberg_platform.cluster.lifecycle import env_lines

    pins = b.kube_pins()
    built = (
        (b.kube_bin_dir(tmp_path, pins), b.kube_key(pins), (*b.KUBE_COMMANDS, "etcd")),
        (b.coredns_bin_dir(tmp_path, pins), b.coredns_key(pins), ("coredns",)),
        (b.netpol_bin_dir(tmp_path, pins), b.netpol_key(pins), (b.NETPOL,)),
    )
    for bindir, key, names in built:
        bindir.mkdir(parents=True)
        (bindir / ".built").write_text(key)
        for name in names:
            (bindir / name).write_text("#!/bin/sh\n")
            (bindir / name).chmod(0o755)
    assert "kubectl" not in b.KUBE_COMMANDS  # not built again with the server
    assert b.cached_binaries(tmp_path) is None  # no kubectl yet: `make tools` has not run
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text("#!/bin/sh\n")
    kubectl.chmod(0o755)
    found = b.cached_binaries(tmp_path)
    assert found is not None and found["kubectl"] == kubectl
    assert found["kube-apiserver"] == b.kube_bin_dir(tmp_path, pins) / "kube-apiserver"

    monkeypatch.setenv("LOGBERG_TOOLS", str(tmp_path))
    monkeypatch.setenv("LOGBERG_CLUSTER_HOME", str(tmp_path / "cluster"))
    path = env_lines(ClusterSettings.from_env()).splitlines()[1]
    assert path.removeprefix("export PATH=").split(":")[:2] == [
        str(kubectl.parent),
        str(b.kube_bin_dir(tmp_path, pins)),
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a bridge needs root")
def test_a_bridge_left_by_another_cluster_is_named_with_the_command_that_removes_it(
    tmp_path: Path,
) -> None:
    bridge = f"lbt{os.getpid() % 100000}"
    other = tmp_path / "other-cluster"
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    try:
        subprocess.run(
            ["ip", "link", "set", "dev", bridge, "alias", f"logberg-cluster:{other}"], check=True
        )
        owned = cluster_cli(tmp_path, "up", LOGBERG_CLUSTER_BRIDGE=bridge)
        mine = f"logberg-cluster:{(tmp_path / 'cluster').resolve()}"
        subprocess.run(["ip", "link", "set", "dev", bridge, "alias", mine], check=True)
        orphan = cluster_cli(tmp_path, "up", LOGBERG_CLUSTER_BRIDGE=bridge)
        subprocess.run(["ip", "link", "set", "dev", bridge, "alias", ""], check=True)
        foreign = cluster_cli(tmp_path, "up", LOGBERG_CLUSTER_BRIDGE=bridge)
    finally:
        subprocess.run(["ip", "link", "del", bridge], check=True)
    assert owned.returncode == 2, owned.stdout + owned.stderr
    assert f"LOGBERG_CLUSTER_HOME={other} logberg cluster down" in owned.stderr
    assert orphan.returncode == 2, orphan.stdout + orphan.stderr
    assert f"ip link delete {bridge}" in orphan.stderr
    assert foreign.returncode == 2, foreign.stdout + foreign.stderr
    assert "did not create it" in foreign.stderr and "LOGBERG_CLUSTER_BRIDGE" in foreign.stderr
    assert not (tmp_path / "cluster" / "host-record.json").exists()


def test_a_client_with_the_clusters_kubeconfig_is_not_a_process_of_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`down` leaves (and names) kubectl, helm and `logberg k8s` processes that use the
    cluster's kubeconfig: they are the user's, not the cluster's (#55)."""
    from logberg_platform.cluster.cluster_settings import ClusterSettings
    from logberg_platform.cluster.lifecycle import is_client

    monkeypatch.setenv("LOGBERG_CLUSTER_HOME", str(tmp_path / "c"))
    s = ClusterSettings.from_env()
    kc = f"{s.home}/kubeconfig"
    assert is_client(f"/usr/bin/python3 logberg k8s --kubeconfig={kc} --context=x ui", s)
    assert is_client(f"kubectl --kubeconfig {kc} get pods", s)
    assert not is_client(f"{s.home}/bin/kubelet --kubeconfig={kc} --root-dir={s.home}/kubelet", s)
    assert not is_client(f"containerd --config={s.home}/conf/containerd.toml", s)
