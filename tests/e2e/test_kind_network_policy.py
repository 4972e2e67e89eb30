"""On kind, kindnetd's part (logberg-kind-net, kube-network-policies) enforces the charts'
NetworkPolicies: a pod without the metastore-client label cannot reach the metastore's
thrift port, and a labelled one gets a thrift answer. Proven by pods that connect."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.e2e.kind import Kind

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# A thrift call (get_all_databases, binary protocol) to the metastore's service: "answer"
# with the reply, or what stopped it.
PROBE = r"""
import socket, struct
name = b"get_all_databases"
call = struct.pack("!Ii", 0x80010001, len(name)) + name + struct.pack("!i", 1) + b"\x00"
try:
    with socket.create_connection(("hive-metastore", 9083), timeout=8) as s:
        s.sendall(call)
        got = b""
        while b"default" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    print("answer", "databases include default" if b"default" in got else got[:40])
except Exception as e:
    print("refused", type(e).__name__, e)
"""


def spark_image(k: Kind) -> str:
    pods = json.loads(k.kubectl("get", "pods", "-l", "app.kubernetes.io/component=toolbox",
                                "-o", "json"))  # fmt: skip
    return str(pods["items"][0]["spec"]["containers"][0]["image"])


def probe(k: Kind, labels: dict[str, str]) -> str:
    """Run PROBE in a pod with these labels until it exits; what it printed."""
    name = f"e2e-probe-{secrets.token_hex(3)}"
    overrides = {
        "apiVersion": "v1",
        "metadata": {"labels": labels},
        "spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 185}},
    }
    try:
        k.kubectl(
            "run", name, "--restart=Never", f"--image={spark_image(k)}",
            "--image-pull-policy=Never", f"--overrides={json.dumps(overrides)}",
            "--command", "--", "python3", "-c", PROBE,
        )  # fmt: skip
        k.kubectl(
            "wait", f"pod/{name}", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=300s"
        )
        return k.kubectl("logs", name).strip()
    finally:
        k.kubectl("delete", "pod", name, "--ignore-not-found", "--wait=false", check=False)


def test_an_unlabelled_pod_cannot_reach_the_metastore(kind: Kind) -> None:
    got = probe(kind, {"app": "e2e-probe"})
    assert got.startswith("refused") and ("timed out" in got or "Timeout" in got), got


def test_a_labelled_pod_gets_a_thrift_answer(kind: Kind) -> None:
    got = probe(kind, {"app": "e2e-probe", "logberg.io/metastore-client": "true"})
    assert got == "answer databases include default", got
