"""Connections made from inside a pod, for the NetworkPolicy tests: a probe pod (any image
with python3) and a probe script that connects and makes one protocol call per target."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.e2e.framework import Deployed, wait_until

# Standard library only. One line per target: "<name> answer ..." or "<name> refused ...",
# the targets probed at once.
PROBE = r"""
import socket, struct, sys, threading  # python3-minimal: threading, no concurrent.futures

def thrift(host, port):
    name = b"get_all_databases"  # binary protocol, strict CALL, no arguments
    call = struct.pack("!Ii", 0x80010001, len(name)) + name + struct.pack("!i", 1) + b"\x00"
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(call)
        got = b""
        while b"default" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    assert got[:4] == struct.pack("!I", 0x80010002), got[:40]  # a REPLY
    return "databases include default" if b"default" in got else repr(got[:60])

def postgres(host, port):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(struct.pack("!ii", 8, 80877103))  # SSLRequest
        return "sslrequest " + s.recv(1).decode()

def s3(host, port):  # plain sockets: the metastore's image has python3-minimal, no http.client
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(f"GET / HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        got = b""
        while chunk := s.recv(4096):
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    status = head.split()[1].decode()
    return f"http {status} " + body[:300].decode(errors="replace").replace("\n", " ")

def dns(host, port):
    return "resolves " + socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)[0][4][0]

def h2(host, port):  # gRPC rides on HTTP/2: the server's SETTINGS frame answers our preface
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
        head = s.recv(9)
    assert len(head) == 9 and head[3] == 4, head  # frame type 4: SETTINGS
    return "http2 settings"

def kafka(host, port):  # ApiVersions v0: the first request of every Kafka client
    body = struct.pack("!hhih", 18, 0, 7, 5) + b"probe"
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(struct.pack("!i", len(body)) + body)
        got = b""
        while len(got) < 4 or len(got) < 4 + struct.unpack("!i", got[:4])[0]:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    correlation, error, apis = struct.unpack("!ihi", got[4:14])
    assert correlation == 7, got[:40]
    return f"apiversions error {error}, {apis} apis"

def listen(host, port):
    with socket.create_connection((host, port), timeout=5) as s:
        return s.recv(256).decode().strip()

def one(target):
    kind, host, port = target.split(":")
    try:
        return f"{kind} answer {globals()[kind](host, int(port))}"
    except Exception as e:
        return f"{kind} refused {type(e).__name__} {e}"

# All at once: a refused target waits out its 5 s timeout beside the others, not after them.
lines = [None] * (len(sys.argv) - 1)
def run(i, target):
    lines[i] = one(target)
threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(sys.argv[1:])]
for t in threads:
    t.start()
for t in threads:
    t.join()
for line in lines:
    print(line, flush=True)
"""


# Killing `kubectl exec` leaves the process in the container running: it ends itself.
LISTENER = """import signal, socket, sys
signal.alarm(300)
s = socket.create_server(("", int(sys.argv[1])))
print("up", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(sys.argv[2].encode() + b"\\n")
    c.close()
"""


@contextmanager
def listening(d: Deployed, ns: str, pod: str) -> Iterator[str]:
    """A listener inside a running pod that answers each connection with the pod's name,
    for as long as the block runs (at most 5 minutes); yields the `listen:<ip>:<port>` probe
    target."""
    port = 20000 + secrets.randbelow(20000)
    ip = d.kubectl("-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}").strip()
    server = subprocess.Popen(
        [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", "-n", ns, "exec", pod, "--",
         "python3", "-c", LISTENER, str(port), pod],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stderr is not None
        assert server.stdout.readline().strip() == "up", server.stderr.read()
        yield f"listen:{ip}:{port}"
    finally:
        server.kill()
        server.wait(timeout=30)


def spark_image(d: Deployed) -> str:
    return d.k(
        "get", "deploy", "logberg-toolbox",
        "-o", "jsonpath={.spec.template.spec.containers[0].image}",
    )  # fmt: skip


def probe_pod(ns: str, name: str, image: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65534,
                "runAsGroup": 65534,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": "probe",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "infinity"],
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "10m"}},
                }
            ],
        },
    }


def running(d: Deployed, ns: str, name: str) -> None:
    def up() -> bool:
        got = d.kubectl("-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}", check=False)
        return got == "Running"

    wait_until(f"pod {ns}/{name} to run", up)


def probe(d: Deployed, ns: str, name: str, *targets: str) -> dict[str, str]:
    """kind -> 'answer ...' or 'refused ...', from inside the pod."""
    out = d.kubectl("-n", ns, "exec", name, "--", "python3", "-c", PROBE, *targets)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line.strip())
    assert set(lines) == {t.split(":")[0] for t in targets}, out
    return lines


def start_probe_pods(d: Deployed, pods: dict[str, tuple[str, str, dict[str, str]]]) -> None:
    """Probe pods by (namespace, name, labels), running once this returns."""
    image = spark_image(d)
    for ns, name, labels in pods.values():
        d.kubectl("apply", "-f", "-", stdin=json.dumps(probe_pod(ns, name, image, labels)))
    for ns, name, _ in pods.values():
        running(d, ns, name)


def delete_probe_pods(d: Deployed, pods: dict[str, tuple[str, str, dict[str, str]]]) -> None:
    for ns, name, _ in pods.values():
        d.kubectl("-n", ns, "delete", "pod", name, "--wait=false", check=False)
