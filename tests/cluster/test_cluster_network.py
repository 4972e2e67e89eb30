"""The local cluster's network: podman still reaches the host, and nothing a pod sends
leaves the machine."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess

import pytest

from tests.cluster.framework import (
    OUTSIDE,
    Cluster,
    run_pod,
    unique,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_podman_containers_still_reach_the_host_while_the_cluster_runs(cluster: Cluster) -> None:
    """The cluster leaves podman's networking alone: a container on podman's default network
    connects to a listener on the host through its bridge gateway."""
    net = json.loads(
        subprocess.run(
            ["podman", "network", "inspect", "podman"], capture_output=True, text=True, check=True
        ).stdout
    )[0]
    gateway = net["subnets"][0]["gateway"]
    with socket.socket() as listener:
        listener.bind((gateway if _has_address(gateway) else "0.0.0.0", 0))
        listener.listen()
        port = listener.getsockname()[1]
        proc = subprocess.Popen(
            [
                "podman", "--runtime", "runc", "run", "--rm", "--pull=never", "--network=podman",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                "debian:bookworm-slim", "bash", "-c",
                f"exec 3<>/dev/tcp/{gateway}/{port} && echo hello >&3",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        listener.settimeout(120)
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(30)
            assert conn.recv(16).startswith(b"hello")
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


def _has_address(ip: str) -> bool:
    out = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    return f" {ip}/" in out


def _default_route_device() -> str:
    out = subprocess.run(["ip", "route", "show", "default"], capture_output=True, text=True).stdout
    match = re.search(r"\bdev (\S+)", out)
    assert match, f"no default route: {out!r}"
    return match.group(1)


def _count_rule(dev: str, dst: str) -> list[str]:
    comment = "logberg-test-egress-counter"
    return [
        "POSTROUTING",
        "-o",
        dev,
        "-d",
        dst,
        "-m",
        "comment",
        "--comment",
        comment,
        "-j",
        "RETURN",
    ]


def _packets(rule: list[str]) -> int:
    out = subprocess.run(
        ["iptables", "-t", "mangle", "-n", "-v", "-x", "-L", "POSTROUTING"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    dst = rule[rule.index("-d") + 1]
    hits = [ln for ln in out.splitlines() if rule[-3] in ln and ln.split()[8] == dst]
    assert len(hits) == 1, out
    return int(hits[0].split()[0])


def _reject_count() -> int:
    out = subprocess.run(
        ["iptables", "-t", "filter", "-n", "-v", "-x", "-L", "LOGBERG-K8S-EGRESS"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(int(ln.split()[0]) for ln in out.splitlines() if "REJECT" in ln)


def test_pods_cannot_reach_outside_and_nothing_leaves_the_machine(
    cluster: Cluster, probe_image: str
) -> None:
    """A pod's connection to an outside address is refused at once; an empty ClusterIP goes
    nowhere. Counters on the default-route interface prove no packet left."""
    dev = _default_route_device()
    service_cidr = os.environ.get("LOGBERG_CLUSTER_SERVICE_CIDR", "10.96.0.0/16")
    counters = [_count_rule(dev, OUTSIDE), _count_rule(dev, service_cidr)]
    for rule in counters:
        subprocess.run(["iptables", "-t", "mangle", "-I", *rule], check=True)
    try:
        ns = unique("hermetic")
        cluster.kubectl("create", "namespace", ns)
        empty: dict[str, object] = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "nobody", "namespace": ns},
            "spec": {"ports": [{"port": 80}]},  # no selector, no endpoints
        }
        cluster.apply(empty)
        empty_ip = cluster.kubectl(
            "-n", ns, "get", "svc", "nobody", "-o", "jsonpath={.spec.clusterIP}"
        )
        rejected_before = _reject_count()
        script = (
            f"timeout 20 bash -c 'exec 3<>/dev/tcp/{OUTSIDE}/80' && echo OUTSIDE-REACHED; "
            f"timeout 20 bash -c 'exec 3<>/dev/tcp/{empty_ip}/80' && echo EMPTY-REACHED; "
            "echo done"
        )
        status, log = run_pod(cluster, probe_image, ["sh", "-c", script])
        # From the host too: a ClusterIP nobody serves must not leave by the default route.
        subprocess.run(
            ["timeout", "5", "bash", "-c", f"exec 3<>/dev/tcp/{_unused_ip(service_cidr)}/80"],
            capture_output=True,
        )
        # Not one packet to those destinations left through the default-route interface ...
        assert [_packets(rule) for rule in counters] == [0, 0]
        assert status == "Succeeded", log
        assert "done" in log and "REACHED" not in log, log
        # ... and the outside connection met the hermetic rule (refused at once).
        assert _reject_count() > rejected_before
        cluster.kubectl("delete", "namespace", ns, "--wait=false")
    finally:
        for rule in counters:
            subprocess.run(["iptables", "-t", "mangle", "-D", *rule], check=False)


def _unused_ip(cidr: str) -> str:
    import ipaddress

    return str(ipaddress.ip_network(cidr).broadcast_address - 1)
