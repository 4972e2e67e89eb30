"""The release's Spark Connect server (`connect.enabled`): `logberg k8s query` and `sql`
through it, its token, a client killed mid-query, its pod deleted; without it, the toolbox.

The module turns the server on (helm upgrade of the deployed release) and off again at
its end, so the other files see the release as deployed.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.e2e.framework import (
    CONTEXT,
    NS,
    Deployed,
    logberg_k8s,
    truth,
    unique,
)
from tests.e2e.netprobe import delete_probe_pods, probe, start_probe_pods

# Every generated file ingested first (an earlier, interrupted run may have left some).
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("settled")]

SERVER = "logberg-connect"
POD = f"{SERVER}-server"
SECRET = f"{SERVER}-token"
VIA_SERVER = f"through the Spark Connect server {SERVER}"

DAYS = "SELECT CAST(date AS STRING) AS day, COUNT(*) AS n FROM nginx_logs.access_logs GROUP BY date"
REJECTS = "SELECT COUNT(*) AS n FROM nginx_logs.access_logs_rejects"
# Long enough to be killed in the middle, idle while it lasts: one task that sleeps 20 x 1 s
# (the server finishes a detached query; a CPU-bound one would burn a core all that time).
LONG = (
    "SELECT max(s) AS m FROM "
    "(SELECT reflect('java.lang.Thread', 'sleep', 1000L) AS s FROM range(0, 20, 1, 1))"
)


def _connect(d: Deployed, on: bool) -> None:
    d.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", f"--set=connect.enabled={'true' if on else 'false'}", "--wait",
    )  # fmt: skip


def _wait_serving(d: Deployed) -> None:
    """The server pod exists (the operator makes it) and is ready (its port answers)."""
    d.k("wait", "--for=create", f"pod/{POD}", "--timeout=300s")
    d.k("wait", "--for=condition=Ready", f"pod/{POD}", "--timeout=580s")


@pytest.fixture(scope="module")
def server(deployed: Deployed) -> Iterator[Deployed]:
    _connect(deployed, True)
    _wait_serving(deployed)
    try:
        yield deployed
    finally:
        _connect(deployed, False)


def _pod(d: Deployed) -> tuple[str, int]:
    """The server pod's uid and its container's restarts."""
    pod = d.obj("pod", POD)
    [status] = pod["status"]["containerStatuses"]
    return pod["metadata"]["uid"], int(status["restartCount"])


def _token(d: Deployed) -> str:
    return d.secret(SECRET, "token")


def _rows(r: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines()]


def _query(d: Deployed, sql: str) -> subprocess.CompletedProcess[str]:
    return logberg_k8s(d, "query", sql, "--format", "jsonl")


def _assert_manifest(d: Deployed, r_days: subprocess.CompletedProcess[str]) -> None:
    """Rows per day (and the rejects) equal the generator's manifests."""
    want = truth(d.manifests())
    assert {row["day"]: row["n"] for row in _rows(r_days)} == want["days"]
    [rejects] = _rows(_query(d, REJECTS))
    assert rejects["n"] == want["rejected"]


def test_a_query_through_the_server_returns_the_manifests_rows(server: Deployed) -> None:
    r = _query(server, DAYS)
    assert VIA_SERVER in r.stderr, r.stderr
    _assert_manifest(server, r)
    # One warm application serves every client: the same app id twice.
    ids = [_rows(_query(server, "SET spark.app.id"))[0]["value"] for _ in range(2)]
    assert ids[0] == ids[1] and ids[0].startswith("spark-")
    token = _token(server)
    assert token not in r.stdout + r.stderr
    log = server.k("logs", f"pod/{POD}", "-c", "spark-kubernetes-driver")
    assert "SparkConnectServer" in log and token not in log
    assert "SPARK_CONNECT_AUTHENTICATE_TOKEN" not in server.k("get", "configmap", "-o", "json")


def test_the_server_admits_only_the_release_s_labelled_clients(server: Deployed) -> None:
    """Enforced on the local cluster: the gRPC port answers (an HTTP/2 SETTINGS frame) a pod
    with the release's labels and `connect.clientLabels`, and not one missing either."""
    release = {"app.kubernetes.io/name": "logberg", "app.kubernetes.io/instance": "logberg"}
    client = {"logberg.io/connect-client": "true"}
    pods = {
        "client": (NS, unique("connect-client"), release | client),
        "release": (NS, unique("connect-release"), release),
        "label": (NS, unique("connect-label"), client),
    }
    start_probe_pods(server, pods)
    try:
        ip = server.obj("pod", POD)["status"]["podIP"]
        target = f"h2:{ip}:15002"
        assert probe(server, *pods["client"][:2], target) == {"h2": "answer http2 settings"}
        for who in ("release", "label"):
            got = probe(server, *pods[who][:2], target)["h2"]
            assert got.startswith("refused") and "TimeoutError" in got, (who, got)
    finally:
        delete_probe_pods(server, pods)


def test_sql_from_a_pipe_goes_through_the_server(server: Deployed) -> None:
    r = logberg_k8s(
        server, "sql",
        stdin="SELECT COUNT(*) AS n FROM nginx_logs.access_logs;\n-- a comment; still one\n"
        "SELECT 'a;b' AS s, 1 + 1 AS two;\n",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert VIA_SERVER in r.stderr
    n = sum(truth(server.manifests())["days"].values())
    assert r.stdout.splitlines() == ["n", str(n), "s\ttwo", "a;b\t2"]


def test_an_upgrade_keeps_the_generated_token_and_the_server(server: Deployed) -> None:
    token, pod = _token(server), _pod(server)
    _connect(server, True)  # a plain upgrade: the chart looks the Secret up
    assert _token(server) == token
    assert _pod(server) == pod
    r = _query(server, "SELECT 1 AS x")
    assert _rows(r) == [{"x": 1}] and VIA_SERVER in r.stderr


def _port_forward(d: Deployed) -> tuple[subprocess.Popen[str], int]:
    """`kubectl port-forward` to the server's gRPC port; its local port once it listens."""
    proc = subprocess.Popen(
        [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", f"--context={CONTEXT}", "-n", NS,
         "port-forward", f"pod/{POD}", ":15002"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> 15002"
    assert first.startswith("Forwarding from 127.0.0.1:"), first + proc.stderr.read()
    return proc, int(first.split("127.0.0.1:", 1)[1].split()[0])


def _remote(port: int, token: str | None) -> str:
    """SELECT 1 from a Spark Connect client of its own; the error's text when refused."""
    code = (
        "import sys\nfrom pyspark.sql import SparkSession\n"
        "try:\n"
        "    s = SparkSession.builder.remote(sys.argv[1]).create()\n"
        "    print('rows', s.sql('SELECT 1 AS x').collect()[0].x)\n"
        "except Exception as e:\n"
        "    print('refused', type(e).__name__, e)\n"
    )
    url = f"sc://localhost:{port}" + (f"/;token={token}" if token is not None else "")
    proc = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_a_client_without_the_token_or_with_a_wrong_one_is_refused(server: Deployed) -> None:
    forward, port = _port_forward(server)
    try:
        assert _remote(port, _token(server)).strip() == "rows 1"  # the way in works
        missing = _remote(port, None)
        assert missing.startswith("refused SparkConnectGrpcException"), missing
        assert "UNAUTHENTICATED" in missing and "No authentication token" in missing
        wrong = _remote(port, "not-the-token")
        assert wrong.startswith("refused SparkConnectGrpcException"), wrong
        assert "UNAUTHENTICATED" in wrong and "Invalid authentication token" in wrong
    finally:
        forward.send_signal(signal.SIGTERM)
        forward.wait(timeout=60)


def _set_token(d: Deployed, value: str) -> None:
    patch = {"data": {"token": base64.b64encode(value.encode()).decode()}}
    d.k("patch", "secret", SECRET, "--type=merge", "-p", json.dumps(patch))


def test_a_bad_token_in_the_secret_fails_fast_naming_it(server: Deployed) -> None:
    """The server read its token at start; the Secret now says another: the CLI stops at
    once, naming the Secret, and never prints either token."""
    good = _token(server)
    bad = "x" * 48
    _set_token(server, bad)
    try:
        r = _query(server, "SELECT 1 AS x")
    finally:
        _set_token(server, good)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"the Secret {SECRET} (key token; chart value connect.auth)" in r.stderr, r.stderr
    assert "refused the token" in r.stderr
    assert bad not in r.stdout + r.stderr and good not in r.stdout + r.stderr
    assert r.stdout == ""


def test_a_client_killed_mid_query_leaves_the_server_serving(server: Deployed) -> None:
    before = _pod(server)
    log = subprocess.Popen(
        [server.kubectl_bin, f"--kubeconfig={server.home / 'kubeconfig'}", "-n", NS, "logs",
         "--follow", "--tail=0", f"pod/{POD}", "-c", "spark-kubernetes-driver"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    client = subprocess.Popen(
        [str(Path(sys.executable).parent / "logberg"), "k8s",
         f"--kubeconfig={server.home / 'kubeconfig'}", f"--context={CONTEXT}", f"--namespace={NS}",
         "query", LONG],
        cwd=REPO, env=server.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert log.stdout is not None
        seen = []
        for line in log.stdout:  # the server starts the long query's job
            seen.append(line)
            if "Got job" in line:
                break
        else:
            raise AssertionError("the server's log ended before a job started:\n" + "".join(seen))
        assert client.poll() is None, "the client ended before it was killed"
        client.kill()  # no goodbye: the server sees its stream drop
        client.wait(timeout=60)
    finally:
        for p in (client, log):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=60)
    # The server still serves, the same pod and process, with exact rows.
    _assert_manifest(server, _query(server, DAYS))
    assert _pod(server) == before


def test_the_server_pod_comes_back_after_deletion_and_answers(server: Deployed) -> None:
    uid, _ = _pod(server)
    server.k("delete", "pod", POD, "--wait=true", "--timeout=300s")
    _wait_serving(server)
    assert _pod(server)[0] != uid  # a new pod, made by the operator
    r = _query(server, DAYS)
    assert VIA_SERVER in r.stderr
    _assert_manifest(server, r)


def test_without_the_server_query_goes_through_the_toolbox(server: Deployed) -> None:
    _connect(server, False)
    assert server.k("get", "sparkconnect", "-o", "name").strip() == ""
    r = _query(server, DAYS)
    assert "no Spark Connect server in release logberg" in r.stderr, r.stderr
    assert VIA_SERVER not in r.stderr
    _assert_manifest(server, r)
