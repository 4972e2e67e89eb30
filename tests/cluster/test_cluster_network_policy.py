"""The local cluster enforces NetworkPolicies (kube-network-policies behind an NFQUEUE rule,
logberg_platform.cluster.netpol): a policy stops a connection it does not admit, and admits
the ones it names. Every check is a real TCP connection that reads the server's answer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.framework import Cluster, pod, unique, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PORT = 8080
# perl-base is in every Debian image: a server that answers each connection with one line.
SERVER = (
    f"use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => {PORT}, Listen => 16, "
    "ReuseAddr => 1) or die $!; $| = 1; print qq(listening\\n); "
    "while (my $c = $s->accept) { print $c qq(pong\\n); close $c }"
)


def _pod(ns: str, name: str, image: str, labels: dict[str, str], args: list[str]) -> Any:
    doc = pod(name, image, args)
    doc["metadata"] = {"name": name, "namespace": ns, "labels": labels}
    return doc


def _running(c: Cluster, ns: str, name: str) -> str:
    """Wait for the pod to run; its IP."""

    def ip() -> str:
        out = c.kubectl(
            "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase} {.status.podIP}",
            check=False,
        ).split()  # fmt: skip
        return out[1] if out[:1] == ["Running"] and len(out) == 2 else ""

    wait_until(f"pod {ns}/{name} to run", lambda: bool(ip()))
    return ip()


def _answers(c: Cluster, ns: str, client: str, ip: str) -> bool:
    """The client pod connects to the server and reads its answer."""
    script = f"timeout 5 bash -c 'exec 3<>/dev/tcp/{ip}/{PORT} && read -r line <&3 && echo $line'"
    out = c.kubectl("-n", ns, "exec", client, "--", "sh", "-c", script, check=False)
    return "pong" in out.splitlines()


def test_a_policy_admits_only_the_pods_it_names(cluster: Cluster, probe_image: str) -> None:
    ns, other_ns = unique("netpol"), unique("netpol-other")
    for n in (ns, other_ns):
        cluster.kubectl("create", "namespace", n)
    sleeper = ["sleep", "infinity"]
    cluster.apply(_pod(ns, "server", probe_image, {"app": "server"}, ["perl", "-e", SERVER]))
    cluster.apply(_pod(ns, "client", probe_image, {"role": "client"}, sleeper))
    cluster.apply(_pod(ns, "stranger", probe_image, {"role": "other"}, sleeper))
    cluster.apply(_pod(other_ns, "client", probe_image, {"role": "client"}, sleeper))
    ip = _running(cluster, ns, "server")
    for n, name in ((ns, "client"), (ns, "stranger"), (other_ns, "client")):
        _running(cluster, n, name)

    # No policy yet: everyone gets an answer (what the policy below takes away is real).
    assert _answers(cluster, ns, "stranger", ip)
    assert _answers(cluster, other_ns, "client", ip)

    cluster.apply(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "server-clients-only", "namespace": ns},
            "spec": {
                "podSelector": {"matchLabels": {"app": "server"}},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                        "ports": [{"port": PORT, "protocol": "TCP"}],
                    }
                ],
            },
        }
    )
    # The enforcer sees the policy through its informer: wait for the first refusal.
    wait_until(
        "the policy to refuse the unlabelled pod",
        lambda: not _answers(cluster, ns, "stranger", ip),
        timeout=60,
    )
    assert _answers(cluster, ns, "client", ip)
    assert not _answers(cluster, ns, "stranger", ip)
    # The same label in another namespace is another pod: refused.
    assert not _answers(cluster, other_ns, "client", ip)

    cluster.kubectl("-n", ns, "delete", "networkpolicy", "server-clients-only")
    wait_until(
        "the deleted policy to admit the unlabelled pod again",
        lambda: _answers(cluster, ns, "stranger", ip),
        timeout=60,
    )
    for n in (ns, other_ns):
        cluster.kubectl("delete", "namespace", n, "--wait=false")
