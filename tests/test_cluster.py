"""The local single-node Kubernetes cluster, for real: one cluster for the whole module,
brought up through `logberg cluster up` (after `logberg setup kubernetes`, which builds
the pinned binaries if the cache is cold) and taken down by the last test, which checks
that the host is as it was before `up`.

Needs root, containerd, runc, podman with the local debian:bookworm-slim base: skipped with
the reason otherwise. The tests run in file order; the last one tears the cluster down.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PINS_TOML = REPO / "jobs" / "logberg" / "versions.toml"
# An address outside this machine (TEST-NET-2), reached through the default route.
OUTSIDE = "198.51.100.7"
TIMEOUT = 180.0


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the local cluster needs root"
    for cmd in ("containerd", "ctr", "podman", "iptables", "gcc"):
        if shutil.which(cmd) is None:
            return f"{cmd} is not installed"
    if subprocess.run(["podman", "image", "exists", "debian:bookworm-slim"]).returncode != 0:
        return "podman has no debian:bookworm-slim base image yet (the images build makes it)"
    return None


@dataclass
class Cluster:
    env: dict[str, str]
    home: Path
    kubectl_bin: Path
    before: dict[str, object]
    up_output: str

    def cli(self, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "logberg.cli", "cluster", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO,
        )

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [str(self.kubectl_bin), f"--kubeconfig={self.home / 'kubeconfig'}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout + (proc.stderr if not check else "")

    def apply(self, doc: dict[str, object]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(doc))


def wait_for(what: str, check: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


# -- the host picture `down` must restore --------------------------------------------------------

# Other tenants of this machine (podman/netavark) change these while we run; they are not ours.
FOREIGN = re.compile(
    r"NETAVARK|netavark|podman|veth|/var/lib/containers|/run/containers|/run/netns"
)
VOLATILE_SYSCTL = re.compile(
    r"^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|kernel\.(ns_last_pid|random\.|pty\.nr)"
    r"|net\.netfilter\.nf_conntrack_count|net\.ipv[46]\.(conf|neigh)\.(?!all\.|default\.))"
)


def host_picture() -> dict[str, object]:
    def lines(*cmd: str) -> list[str]:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return sorted(ln for ln in out.splitlines() if not FOREIGN.search(ln))

    rules = [
        re.sub(r"\[\d+:\d+\]", "", ln)
        for family in ("iptables-save", "ip6tables-save")
        for ln in lines(family)
        if not ln.startswith("#")
    ]
    links = [re.sub(r"^\d+: (\S+?)(@\S+)?:.*", r"\1", ln) for ln in lines("ip", "-o", "link")]
    sysctls = [
        ln
        for ln in subprocess.run(
            ["sysctl", "-a"], capture_output=True, text=True
        ).stdout.splitlines()
        if not VOLATILE_SYSCTL.match(ln) and not FOREIGN.search(ln)
    ]
    mounts = sorted(
        ln.split()[4]
        for ln in Path("/proc/self/mountinfo").read_text().splitlines()
        if not FOREIGN.search(ln.split()[4])
    )
    cgroups = sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/kubepods"))
    dirs = {
        d: Path(d).exists()
        for d in ("/run/containerd", "/var/lib/cni", "/var/log/containers", "/var/lib/kubelet",
                  "/var/log/pods", "/etc/kubernetes", "/usr/libexec/kubernetes", "/opt/containerd",
                  "/var/lib/containerd", "/var/run/kubernetes")
    }  # fmt: skip
    return {
        "rules": sorted(set(rules)),
        "links": links,
        "routes": lines("ip", "route", "show", "table", "all"),
        "mounts": mounts,
        "sysctls": sorted(sysctls),
        "cgroups": cgroups,
        "dirs": dirs,
    }


# -- the fixture ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    home = Path(tempfile.mkdtemp(prefix="lbk-", dir="/tmp"))
    env = dict(
        os.environ,
        LOGBERG_CLUSTER_HOME=str(home),
        LOGBERG_CLUSTER_CONTEXT="logberg-test",
        LOGBERG_TOOLS=os.environ.get("LOGBERG_TOOLS", str(REPO / ".tools")),
    )
    before = host_picture()
    c = Cluster(env=env, home=home, kubectl_bin=Path(), before=before, up_output="")
    started = time.monotonic()
    built = subprocess.run(
        [sys.executable, "-m", "logberg.cli", "setup", "kubernetes"],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=REPO,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    proc = c.cli("up")
    c.up_output = proc.stdout
    print(f"\ncluster up in {time.monotonic() - started:.0f}s\n{proc.stdout[-3000:]}")
    try:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
        version = _pins()["version"]
        c.kubectl_bin = (
            Path(env["LOGBERG_TOOLS"]).resolve() / "kubernetes" / version / "bin" / "kubectl"
        )
        yield c
    finally:
        c.cli("down", "--purge", timeout=600)


def _pins() -> dict[str, str]:
    import tomllib

    return dict(tomllib.loads(PINS_TOML.read_text())["kubernetes"])


# -- images and pods -----------------------------------------------------------------------------

PROBE = """#!/bin/sh
# Test probe: prints its nonce and what it was asked to check, then exits 0.
echo "nonce=$NONCE"
exec "$@"
"""


@pytest.fixture(scope="module")
def probe_image(cluster: Cluster) -> str:
    """A locally built image (FROM the local Debian base, plus the cluster's kubectl),
    tagged by its content, loaded into the node."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        (ctx / "probe.sh").write_text(PROBE)
        shutil.copy(cluster.kubectl_bin, ctx / "kubectl")
        (ctx / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY --chmod=0555 probe.sh /probe.sh\n"
            "COPY --chmod=0555 kubectl /usr/local/bin/kubectl\n"
            'ENTRYPOINT ["/probe.sh"]\n'
        )
        digest = hashlib.sha256()
        for name in ("probe.sh", "kubectl", "Dockerfile"):
            digest.update((ctx / name).read_bytes())
        ref = f"localhost/logberg-cluster-probe:{digest.hexdigest()[:12]}"
        if subprocess.run(["podman", "image", "exists", ref]).returncode != 0:
            subprocess.run(
                ["podman", "--runtime", "runc", "build", "--pull=never", "-t", ref, str(ctx)],
                check=True,
                capture_output=True,
            )
    proc = cluster.cli("load", ref)
    assert proc.returncode == 0, proc.stderr
    return ref


def pod(name: str, image: str, args: list[str], **extra: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": image,
                "imagePullPolicy": "Never",
                "args": args,
                "env": [{"name": "NONCE", "value": name}],
            }
        ],
    }
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def phase(c: Cluster, name: str) -> str:
    return c.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}", check=False).strip()


def run_pod(c: Cluster, image: str, args: list[str]) -> tuple[str, str]:
    """Run a pod to completion; (phase, log)."""
    name = unique("probe")
    c.apply(pod(name, image, args))
    wait_for(f"pod {name} to finish", lambda: phase(c, name) in ("Succeeded", "Failed"))
    return phase(c, name), c.kubectl("logs", name)


# -- tests ---------------------------------------------------------------------------------------


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


def test_services_resolve_through_coredns_from_a_pod(cluster: Cluster, probe_image: str) -> None:
    ns = unique("dns")
    cluster.kubectl("create", "namespace", ns)
    # A ClusterIP Service and a headless one, both selecting a long-running pod.
    backend = pod("backend", probe_image, ["sleep", "3600"])
    backend["metadata"] = {"name": "backend", "namespace": ns, "labels": {"app": "backend"}}
    cluster.apply(backend)
    for name, cluster_ip in (("web", None), ("web-headless", "None")):
        spec: dict[str, object] = {
            "selector": {"app": "backend"},
            "ports": [{"port": 80, "targetPort": 8080}],
        }
        if cluster_ip:
            spec["clusterIP"] = cluster_ip
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": ns},
                "spec": spec,
            }
        )
    wait_for("backend pod running", lambda: _ns_phase(cluster, ns, "backend") == "Running")
    web_ip = cluster.kubectl("-n", ns, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
    pod_ip = cluster.kubectl("-n", ns, "get", "pod", "backend", "-o", "jsonpath={.status.podIP}")
    script = (
        f"getent hosts web.{ns}.svc.cluster.local; "
        f"getent hosts web-headless.{ns}.svc.cluster.local; "
        # A ClusterIP with endpoints answers TCP from a pod: the apiserver through its Service.
        "bash -c 'exec 3<>/dev/tcp/kubernetes.default.svc.cluster.local/443' && echo api-reached"
    )
    status, log = run_pod(cluster, probe_image, ["sh", "-c", script])
    assert status == "Succeeded", log
    assert re.search(rf"^{re.escape(web_ip)}\s+web\.{ns}\.svc\.cluster\.local$", log, re.M), log
    assert re.search(rf"^{re.escape(pod_ip)}\s+web-headless\.{ns}", log, re.M), log
    assert "api-reached" in log
    cluster.kubectl("delete", "namespace", ns, "--wait=false")


def _ns_phase(c: Cluster, ns: str, name: str) -> str:
    return c.kubectl("-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}", check=False)


def test_a_mounted_secret_is_refreshed_after_the_secret_changes(
    cluster: Cluster, probe_image: str
) -> None:
    name = unique("rotate")
    first, second = secrets.token_hex(8), secrets.token_hex(8)
    cluster.kubectl("create", "secret", "generic", name, f"--from-literal=token={first}")
    spec = pod(name, probe_image, ["sleep", "3600"])
    spec["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": name}}]  # type: ignore[index]
    spec["spec"]["containers"][0]["volumeMounts"] = [  # type: ignore[index]
        {"name": "s", "mountPath": "/etc/rotated", "readOnly": True}
    ]
    cluster.apply(spec)
    wait_for(f"pod {name} running", lambda: phase(cluster, name) == "Running")

    def mounted() -> str:
        return cluster.kubectl("exec", name, "--", "cat", "/etc/rotated/token", check=False)

    assert mounted().strip() == first
    patch = json.dumps({"stringData": {"token": second}})
    cluster.kubectl("patch", "secret", name, "--type=merge", "-p", patch)
    wait_for("the kubelet to refresh the mounted Secret", lambda: mounted().strip() == second)
    cluster.kubectl("delete", "pod", name, "--wait=false")


def test_a_job_reads_the_api_with_its_service_account_within_rbac(
    cluster: Cluster, probe_image: str
) -> None:
    """A Job's pod uses its ServiceAccount token (in-cluster config, the cluster CA) through
    the kubernetes Service: allowed what its Role grants, refused the rest; emptyDir works."""
    ns = unique("job")
    nonce = secrets.token_hex(6)
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("-n", ns, "create", "serviceaccount", "reader")
    cluster.kubectl(
        "-n", ns, "create", "role", "read-config", "--verb=get", "--resource=configmaps"
    )  # fmt: skip
    cluster.kubectl(
        "-n", ns, "create", "rolebinding", "reader", "--role=read-config",
        f"--serviceaccount={ns}:reader",
    )  # fmt: skip
    cluster.kubectl("-n", ns, "create", "configmap", "greeting", f"--from-literal=msg={nonce}")
    script = (
        "kubectl get configmap greeting -o jsonpath={.data.msg} > /scratch/msg && "
        "echo msg=$(cat /scratch/msg) && "
        "if kubectl get secrets 2>/scratch/err; then echo SECRETS-LISTED; fi; "
        "grep -q Forbidden /scratch/err && echo secrets-forbidden"
    )
    template = pod("worker", probe_image, ["sh", "-c", script])["spec"]
    template["serviceAccountName"] = "reader"  # type: ignore[index]
    template["volumes"] = [{"name": "scratch", "emptyDir": {}}]  # type: ignore[index]
    template["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]  # type: ignore[index]
    cluster.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "worker", "namespace": ns},
            "spec": {"backoffLimit": 0, "template": {"spec": template}},
        }
    )

    def finished() -> bool:
        conds = cluster.kubectl(
            "-n", ns, "get", "job", "worker", "-o", "jsonpath={.status.conditions[*].type}"
        )  # fmt: skip
        return "Complete" in conds or "Failed" in conds

    wait_for("the Job to finish", finished)
    log = cluster.kubectl("-n", ns, "logs", "job/worker")
    assert f"msg={nonce}" in log, log
    assert "secrets-forbidden" in log and "SECRETS-LISTED" not in log, log
    conds = cluster.kubectl(
        "-n", ns, "get", "job", "worker", "-o", "jsonpath={.status.conditions[*].type}"
    )
    assert "Complete" in conds
    cluster.kubectl("delete", "namespace", ns, "--wait=false")


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


WEBHOOK_SRC = REPO / "tests" / "cluster_webhook"


@pytest.fixture(scope="module")
def webhook_image(cluster: Cluster) -> str:
    """tests/cluster_webhook built static with Go, in an image FROM the local Debian base."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false")
        go = shutil.which("go") or "/usr/local/go/bin/go"
        subprocess.run(
            [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(ctx / "hook"), "."],
            cwd=WEBHOOK_SRC,
            env=env,
            check=True,
            capture_output=True,
        )
        (ctx / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY --chmod=0555 hook /hook\nUSER 65532:65532\n"
            'ENTRYPOINT ["/hook"]\n'
        )
        digest = hashlib.sha256((ctx / "hook").read_bytes() + (ctx / "Dockerfile").read_bytes())
        ref = f"localhost/logberg-cluster-webhook:{digest.hexdigest()[:12]}"
        if subprocess.run(["podman", "image", "exists", ref]).returncode != 0:
            subprocess.run(
                ["podman", "--runtime", "runc", "build", "--pull=never", "-t", ref, str(ctx)],
                check=True,
                capture_output=True,
            )
    proc = cluster.cli("load", ref)
    assert proc.returncode == 0, proc.stderr
    return ref


def _tls_for(service_dns: str, folder: Path) -> None:
    """A throwaway CA and a serving certificate for the webhook Service."""

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    ssl("req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-days", "1",
        "-subj", "/CN=webhook-test-ca", "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    ssl("req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", f"/CN={service_dns}",
        "-keyout", "tls.key", "-out", "tls.csr")  # fmt: skip
    (folder / "ext.cnf").write_text(f"subjectAltName=DNS:{service_dns}\n")
    ssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "tls.crt")  # fmt: skip


def test_a_mutating_webhook_in_the_pod_network_is_called(
    cluster: Cluster, webhook_image: str
) -> None:
    """The apiserver calls a webhook Service backed by a pod (as the spark-operator's is)."""
    ns = unique("webhook")
    cluster.kubectl("create", "namespace", ns)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _tls_for(f"hook.{ns}.svc", folder)
        cluster.kubectl(
            "-n", ns, "create", "secret", "tls", "hook-tls",
            f"--cert={folder / 'tls.crt'}", f"--key={folder / 'tls.key'}",
        )  # fmt: skip
        ca_bundle = base64.b64encode((folder / "ca.crt").read_bytes()).decode()
    server = pod("hook", webhook_image, [])
    server["metadata"] = {"name": "hook", "namespace": ns, "labels": {"app": "hook"}}
    spec = server["spec"]
    spec["restartPolicy"] = "Always"  # type: ignore[index]
    spec["volumes"] = [{"name": "tls", "secret": {"secretName": "hook-tls"}}]  # type: ignore[index]
    main = spec["containers"][0]  # type: ignore[index]
    main["volumeMounts"] = [{"name": "tls", "mountPath": "/tls", "readOnly": True}]
    main["readinessProbe"] = {"tcpSocket": {"port": 8443}, "periodSeconds": 1}
    cluster.apply(server)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "hook", "namespace": ns},
            "spec": {"selector": {"app": "hook"}, "ports": [{"port": 443, "targetPort": 8443}]},
        }
    )
    config_name = f"logberg-test-{ns}"
    cluster.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": config_name},
            "webhooks": [
                {
                    "name": "label.logberg.test",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 10,
                    "clientConfig": {
                        "service": {
                            "name": "hook",
                            "namespace": ns,
                            "path": "/mutate",
                            "port": 443,
                        },
                        "caBundle": ca_bundle,
                    },
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                }
            ],
        }
    )
    try:
        wait_for(
            "the webhook pod to be ready",
            lambda: cluster.kubectl(
                "-n", ns, "get", "pod", "hook", "-o",
                "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False,
            ).strip() == "True",
        )  # fmt: skip

        def labelled() -> bool:
            name = unique("cm")
            out = cluster.kubectl("-n", ns, "create", "configmap", name, check=False)
            if "created" not in out:
                return False  # the webhook configuration or endpoints not yet in effect
            labels = cluster.kubectl(
                "-n", ns, "get", "configmap", name, "-o", "jsonpath={.metadata.labels}"
            )
            return "mutated" in labels

        wait_for("a ConfigMap labelled by the webhook", labelled)
        assert "mutated request" in cluster.kubectl("-n", ns, "logs", "hook")
    finally:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", config_name, check=False)
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


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


def test_coredns_refuses_names_outside_the_cluster(cluster: Cluster, probe_image: str) -> None:
    status, log = run_pod(
        cluster,
        probe_image,
        ["sh", "-c", "getent hosts example.com && echo RESOLVED; cat /etc/resolv.conf; echo done"],
    )
    assert status == "Succeeded", log
    assert "RESOLVED" not in log and "done" in log
    assert "nameserver" in log


def test_logberg_k8s_says_the_operator_is_missing(cluster: Cluster) -> None:
    """A cluster without the Spark Operator: `logberg k8s` names the CRD and what to do."""
    proc = subprocess.run(
        [sys.executable, "-m", "logberg.cli", "k8s", f"--kubeconfig={cluster.home / 'kubeconfig'}",
         "--context=logberg-test", "--namespace=default", "status"],
        env=cluster.env, capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the CRD sparkapplications.sparkoperator.k8s.io is not installed" in proc.stderr
    assert "make k8s-deploy" in proc.stderr and "Traceback" not in proc.stderr


def test_up_again_is_idempotent(cluster: Cluster) -> None:
    pids = {p.name: p.read_text() for p in (cluster.home / "run").glob("*.pid")}
    assert len(pids) == 7
    started = time.monotonic()
    proc = cluster.cli("up")
    assert proc.returncode == 0, proc.stderr
    assert "already up" in proc.stdout
    assert {p.name: p.read_text() for p in (cluster.home / "run").glob("*.pid")} == pids
    print(f"second up: {time.monotonic() - started:.1f}s")


def test_status_names_every_component(cluster: Cluster) -> None:
    proc = cluster.cli("status")
    assert proc.returncode == 0, proc.stderr
    for name in ("containerd", "etcd", "kube-apiserver", "kube-controller-manager",
                 "kube-scheduler", "kubelet", "kube-proxy"):  # fmt: skip
        assert re.search(rf"^\s+{name}\s+running\s+pid \d+", proc.stdout, re.M), proc.stdout
    assert "Ready" in proc.stdout and "coredns" in proc.stdout


def test_down_leaves_the_host_as_it_was(cluster: Cluster) -> None:
    """Runs last: `down` stops every process and undoes every host change `up` made."""
    proc = cluster.cli("down", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = host_picture()
    for key, value in cluster.before.items():
        now = after[key]
        if isinstance(value, list) and isinstance(now, list):
            gone, new = sorted(set(value) - set(now)), sorted(set(now) - set(value))
            assert (gone, new) == ([], []), f"{key} after down: missing {gone}, extra {new}"
        assert after[key] == value, f"{key} differs after down"
    leftovers = subprocess.run(["pgrep", "-af", str(cluster.home)], capture_output=True, text=True)
    assert leftovers.stdout == "", leftovers.stdout
    assert not (cluster.home / "host-record.json").exists()
