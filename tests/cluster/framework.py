"""The live-cluster tests' framework (tests/cluster/conftest.py holds the fixtures).

Two clusters, one at a time (they use the same ports):

* the bare cluster (home /tmp/lbk-tests, context logberg-test): `logberg cluster up`, nothing
  deployed; tests/cluster/test_cluster_*.py;
* the deployed cluster (home /tmp/lbk8s-tests, context logberg-k8s-test): `make cluster-up
  k8s-deploy k8s-demo` exactly as the README says; every other file.

Each file runs alone: the fixture brings its cluster up (taking the other one down) or reuses
it when it already runs, and for the deployed cluster when its deployment is current (made
from the same charts, images and code: `deployment_inputs`). The session that brought a
cluster up takes it down at its end, unless LOGBERG_TEST_KEEP_CLUSTER=1 keeps it for the
next run; a cluster found running is left running. The outputs of the deploy steps and the
host as it was before `up` are kept in the cluster's home, so a reused cluster is checked
as a fresh one.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from logberg_platform.setup_artifacts import kubectl_path as tools_kubectl
from tests.conftest import REPO
from tests.helpers.waiting import eventually

KEEP = os.environ.get("LOGBERG_TEST_KEEP_CLUSTER", "") not in ("", "0")
PINS_TOML = REPO / "jobs" / "logberg" / "versions.toml"


def tools() -> str:
    return os.environ.get("LOGBERG_TOOLS", str(REPO / ".tools"))


def _pins() -> dict[str, str]:
    import tomllib

    return dict(tomllib.loads(PINS_TOML.read_text())["kubernetes"])


def kubectl_path() -> Path:
    return tools_kubectl(Path(tools()).resolve())  # `make tools`' (the cluster's too)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 600, every: float = 2) -> float:
    """Poll a condition until it holds (tests/helpers/waiting); how long that took."""
    started = time.monotonic()
    eventually(what, check, timeout, every)
    return time.monotonic() - started


def cluster_cli(
    env: dict[str, str], *args: str, timeout: float = 3600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "logberg.cli", "cluster", *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )  # fmt: skip


def is_up(env: dict[str, str]) -> bool:
    home = Path(env["LOGBERG_CLUSTER_HOME"])
    if not (home / "kubeconfig").exists():
        return False
    return "apiserver: /readyz ok" in cluster_cli(env, "status", timeout=120).stdout


def take_down(env: dict[str, str], why: str) -> None:
    """Stop the cluster of this home and undo its host changes; the home goes too."""
    home = Path(env["LOGBERG_CLUSTER_HOME"])
    if not home.exists():
        return
    print(f"\ntaking down the cluster at {home}: {why}")
    proc = cluster_cli(env, "down", "--purge", timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shutil.rmtree(home, ignore_errors=True)


# -- the bare cluster ----------------------------------------------------------------------

NODE_HOME = Path("/tmp/lbk-tests")
NODE_CONTEXT = "logberg-test"
# An address outside this machine (TEST-NET-2), reached through the default route.
OUTSIDE = "198.51.100.7"
TIMEOUT = 180.0


def node_env() -> dict[str, str]:
    return dict(
        os.environ,
        LOGBERG_CLUSTER_HOME=str(NODE_HOME),
        LOGBERG_CLUSTER_CONTEXT=NODE_CONTEXT,
        LOGBERG_TOOLS=tools(),
    )


def wait_until(what: str, check: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    wait_for(what, check, timeout=timeout, every=1)


def node_why_not() -> str | None:
    if os.geteuid() != 0:
        return "the local cluster needs root"
    for cmd in ("containerd", "ctr", "podman", "iptables", "gcc"):
        if shutil.which(cmd) is None:
            return f"{cmd} is not installed"
    return None


@dataclass
class Cluster:
    env: dict[str, str]
    home: Path
    kubectl_bin: Path
    before: dict[str, object]
    up_output: str

    def cli(self, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        return cluster_cli(self.env, *args, timeout=timeout)

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


# -- the host picture `down` must restore --------------------------------------------------------

# Other tenants of this machine (podman/netavark) change these while we run; they are not ours.
FOREIGN = re.compile(
    r"NETAVARK|netavark|podman|veth|/var/lib/containers|/run/containers|/run/netns"
)

VOLATILE_SYSCTL = re.compile(
    r"^(fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|kernel\.(ns_last_pid|random\.|pty\.nr)"
    r"|net\.netfilter\.nf_conntrack_count|net\.ipv[46]\.(conf|neigh)\.(?!all\.|default\.)"
    # the kernel makes its TCP Fast Open key on first use: zero on a fresh machine until then
    r"|net\.ipv4\.tcp_fastopen_key)"
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


# -- images and pods -----------------------------------------------------------------------------

PROBE = """#!/bin/sh
# Test probe: prints its nonce and what it was asked to check, then exits 0.
echo "nonce=$NONCE"
exec "$@"
"""


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
    wait_until(f"pod {name} to finish", lambda: phase(c, name) in ("Succeeded", "Failed"))
    return phase(c, name), c.kubectl("logs", name)


def _ns_phase(c: Cluster, ns: str, name: str) -> str:
    return c.kubectl("-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}", check=False)


# -- the deployed cluster ------------------------------------------------------------------

DEPLOY_HOME = Path("/tmp/lbk8s-tests")
NS = "lbtest"  # not the default: every name must follow K8S_NAMESPACE

OPERATOR_NS = "lbtest-operator"

CONTEXT = "logberg-k8s-test"

BUCKET = "logberg"

LANDING = "landing"

EXAMPLES = REPO / "charts" / "logberg" / "examples"

APP_TIMEOUT = 900.0

# The metastore Deployment's pods (not its schema Job's or its `helm test` pod).
METASTORE_PODS = "app.kubernetes.io/instance=hive-metastore,app.kubernetes.io/component=metastore"

# The demo's data: small, one ISO week (2025-01-06 is a Monday), some malformed lines.
DEMO_ARGS = [
    "--num-files", "4", "--lines-per-file", "2500", "--start-date", "2025-01-06",
    "--end-date", "2025-01-12", "--seed", "20261124", "--malformed-rate", "0.01",
]  # fmt: skip

DEPLOY_STEPS = ("cluster-up", "k8s-deploy", "k8s-demo")
# What a deployment is made from: a change here makes a running deployment stale.
DEPLOY_INPUTS = ("charts", "images", "jobs", "generator", "Makefile", "pyproject.toml")


def deploy_env() -> dict[str, str]:
    return dict(
        os.environ,
        LOGBERG_CLUSTER_HOME=str(DEPLOY_HOME),
        LOGBERG_CLUSTER_CONTEXT=CONTEXT,
        LOGBERG_TOOLS=tools(),
    )


def deployment_inputs() -> dict[str, str]:
    """A hash of every tracked file the images, charts and deploy flow are made from (as
    they are in the worktree), with the demo's arguments."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *DEPLOY_INPUTS], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    h = hashlib.sha256(json.dumps(DEMO_ARGS).encode())
    for name in sorted(p for p in listed.split("\0") if p):
        path = REPO / name
        h.update(name.encode() + b"\0")
        if path.is_file():
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return {"inputs": h.hexdigest(), "namespace": NS, "context": CONTEXT}


def deploy_why_not() -> str | None:
    if os.geteuid() != 0:
        return "the local cluster needs root"
    for cmd in ("containerd", "ctr", "podman", "iptables"):
        if shutil.which(cmd) is None:
            return f"{cmd} is not installed"
    return None


ECHO = re.compile(r"^spark-sql \([^)]*\)> ")


class SqlShell:
    """One spark-sql in the toolbox pod (`kubectl exec -i`), fed statements on its stdin: a
    spark-sql per statement would start a JVM in the pod for each check, about half a
    minute on two cores. After each statement the shell selects a marker; the rows are
    what it printed before the marker. A statement Spark rejects is an AssertionError with
    spark-sql's message, as a failed `spark-sql -e` was. Statements go on one line each
    (spark-sql echoes its input after its prompt; those lines are not rows)."""

    def __init__(self, d: Deployed) -> None:
        self.err = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by close())
        self.proc = subprocess.Popen(
            [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", "-n", NS, "exec", "-i",
             "deploy/logberg-toolbox", "--", "spark-sql", "-S"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
        )  # fmt: skip

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, statement: str, timeout: float = 600) -> list[list[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        marker = f"logberg-end-{uuid.uuid4().hex}"
        start = self.err.seek(0, os.SEEK_END)
        one_line = " ".join(statement.strip().rstrip(";").splitlines())
        self.proc.stdin.write(f"{one_line};\nSELECT '{marker}';\n")
        self.proc.stdin.flush()
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        rows: list[list[str]] = []
        try:
            for line in self.proc.stdout:
                if line.strip() == marker:
                    break
                if line.strip() and not ECHO.match(line):  # its prompt, echoing the input
                    rows.append(line.rstrip("\n").split("\t"))
            else:
                raise BrokenPipeError(f"spark-sql in the toolbox ended: {self._err(0)}")
        finally:
            timer.cancel()
        said = self._err(start)
        failed = [ln for ln in said.splitlines() if re.match(r"^(\[[A-Z_.]+\]|Error\b)", ln)]
        assert not failed, f"spark-sql: {statement.strip()[:200]}\n{said[-3000:]}"
        return rows

    def _err(self, start: int) -> str:
        self.err.seek(start)
        return self.err.read()

    def close(self) -> None:
        if self.alive():
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


@dataclass
class Deployed:
    home: Path
    env: dict[str, str]
    kubectl_bin: str
    values: Path
    outputs: dict[str, str] = field(default_factory=dict)
    gateway: str = ""  # the Pushgateway the release's jobs push to (conftest's)
    shell: SqlShell | None = field(default=None, repr=False)

    @property
    def make_vars(self) -> list[str]:
        return [
            "K8S_TARGET=local",
            f"TOOLS={self.env['LOGBERG_TOOLS']}",
            f"CLUSTER_HOME={self.home}",
            f"CLUSTER_CONTEXT={CONTEXT}",
            f"K8S_NAMESPACE={NS}",
            f"OPERATOR_NAMESPACE={OPERATOR_NS}",
            "K8S_VALUES="
            + " ".join(
                f"{release}={f}"
                for release, f in (
                    ("logberg", self.values),
                    ("hive-metastore", self.metastore_values),
                )
                if release == "logberg" or f.is_file()  # a deployment made before it had none
            ),
        ]

    @property
    def metastore_values(self) -> Path:
        """The hive-metastore release's extra values, beside the logberg release's."""
        return self.values.with_name("hive-metastore-values.yaml")

    def make(self, *targets: str, timeout: float = 3600) -> str:
        proc = subprocess.run(
            ["make", "--no-print-directory", *targets, *self.make_vars],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"make {' '.join(targets)} failed:\n{out[-8000:]}"
        return proc.stdout

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            [self.kubectl_bin, f"--kubeconfig={self.home / 'kubeconfig'}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def k(self, *args: str, **kw: Any) -> str:
        return self.kubectl("-n", NS, *args, **kw)

    def node_ip(self) -> str:
        """The node's address: this machine as the pods reach it (the cluster's bridge)."""
        return self.kubectl(
            "get", "nodes", "-o",
            "jsonpath={.items[0].status.addresses[?(@.type=='InternalIP')].address}",
        ).strip()  # fmt: skip

    def obj(self, *args: str) -> dict[str, Any]:
        return dict(json.loads(self.k("get", *args, "-o", "json")))

    def logberg_k8s(self, *args: str, timeout: float = APP_TIMEOUT + 60) -> str:
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "logberg"), "k8s",
                f"--kubeconfig={self.home / 'kubeconfig'}", f"--context={CONTEXT}",
                f"--namespace={NS}", *args,
            ],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        assert proc.returncode == 0, f"logberg k8s {args}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def helm(self, *args: str) -> str:
        helm = Path(self.env["LOGBERG_TOOLS"]) / "bin" / "helm"
        proc = subprocess.run(
            [str(helm), f"--kubeconfig={self.home / 'kubeconfig'}", f"--kube-context={CONTEXT}",
             *args],
            capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        assert proc.returncode == 0, f"helm {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    # -- SQL through spark-sql in the cluster (the toolbox pod) ---------------------------
    def sql(self, statement: str) -> list[list[str]]:
        """Rows of `statement`, by spark-sql in the toolbox: one spark-sql for the session
        (`SqlShell`), started again when its pod went (an upgrade rolls the toolbox)."""
        if self.shell is None or not self.shell.alive():
            self.shell = SqlShell(self)
        try:
            return self.shell.run(statement)
        except BrokenPipeError:  # the pod went between two statements
            self.shell = SqlShell(self)
            return self.shell.run(statement)

    def close(self) -> None:
        if self.shell is not None:
            self.shell.close()
            self.shell = None

    # -- the dev S3 server, from this machine through its ClusterIP -----------------------
    def s3(self) -> Any:
        import boto3

        ip = self.k("get", "svc", "logberg-dev-s3", "-o", "jsonpath={.spec.clusterIP}")
        return boto3.client(
            "s3",
            endpoint_url=f"http://{ip}:7070",
            aws_access_key_id=self.secret("logberg-s3", "AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=self.secret("logberg-s3", "AWS_SECRET_ACCESS_KEY"),
            region_name="us-east-1",
        )

    def s3_env(self) -> dict[str, str]:
        ip = self.k("get", "svc", "logberg-dev-s3", "-o", "jsonpath={.spec.clusterIP}")
        return {
            "AWS_ACCESS_KEY_ID": self.secret("logberg-s3", "AWS_ACCESS_KEY_ID"),
            "AWS_SECRET_ACCESS_KEY": self.secret("logberg-s3", "AWS_SECRET_ACCESS_KEY"),
            "AWS_REGION": "us-east-1",
            "S3_ENDPOINT": f"http://{ip}:7070",
        }

    def secret(self, name: str, key: str) -> str:
        data = self.obj("secret", name)["data"]
        return base64.b64decode(data[key]).decode()

    def manifests(self) -> list[dict[str, Any]]:
        client = self.s3()
        listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{LANDING}/raw/nginx/_manifests/")
        return [
            json.loads(client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read())
            for o in listed.get("Contents", [])
        ]

    def generate(self, *args: str) -> dict[str, Any]:
        """More logs into the landing bucket, from this machine (the same generator)."""
        env = {**self.env, **self.s3_env()}
        proc = subprocess.run(
            [sys.executable, "-m", "generator", "--output", f"s3://{BUCKET}/{LANDING}",
             "--endpoint-url", env["S3_ENDPOINT"], "--quiet", *args],
            env=env, capture_output=True, text=True, timeout=600, cwd=REPO,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        seed = int(args[args.index("--seed") + 1])
        [found] = [m for m in self.manifests() if m["seed"] == seed]
        return found

    # -- SparkApplications ----------------------------------------------------------------
    def apply_app(self, name: str, base: str = "ingest") -> None:
        """The example `base`, renamed: a user's own copy of it."""
        doc = yaml.safe_load((EXAMPLES / f"{base}.yaml").read_text())
        doc["metadata"]["name"] = name
        self.k("apply", "-f", "-", stdin=json.dumps(doc))

    def delete_app(self, name: str) -> None:
        self.k(
            "delete", "sparkapplication", name, "--ignore-not-found", "--cascade=foreground",
            "--wait", "--timeout=300s",
        )  # fmt: skip

    def wait_app(self, name: str) -> str:
        return self.logberg_k8s("wait", "app", name, f"--timeout={APP_TIMEOUT}")

    def app_status(self, name: str) -> dict[str, Any]:
        return dict(self.obj("sparkapplication", name).get("status") or {})

    # -- what the demo made, and what later files may rely on -----------------------------
    def demo_manifest(self) -> dict[str, Any]:
        """The manifest of the demo's generator Job (DEMO_ARGS' seed); other files' runs
        generate their own days beside it."""
        seed = int(DEMO_ARGS[DEMO_ARGS.index("--seed") + 1])
        [found] = [m for m in self.manifests() if m["seed"] == seed]
        return found

    def settle(self) -> None:
        """Every generated file ingested (what a file that counts rows starts from): when an
        earlier, interrupted file left files in the landing bucket, the ingest example runs
        once more (it takes only the new files)."""
        want, got = truth(self.manifests()), table_counts(self)
        if got["days"] == want["days"] and got["rejected"] == want["rejected"]:
            return
        print(f"\nthe tables lag the landing bucket ({got} vs {want}): ingesting once more")
        self.delete_app("logberg-ingest-example")
        self.k("apply", "-f", str(EXAMPLES / "ingest.yaml"))
        self.wait_app("logberg-ingest-example")

    # -- reuse across pytest runs ----------------------------------------------------------
    @property
    def stamp(self) -> Path:
        return self.home / "deployed.json"

    def current(self) -> bool:
        """A deployment made by this framework from the same charts, images and code, on a
        cluster that answers, with the releases installed."""
        try:
            if json.loads(self.stamp.read_text()) != deployment_inputs():
                return False
        except (OSError, ValueError):
            return False
        up = cluster_cli(self.env, "status")
        if "apiserver: /readyz ok" not in up.stdout:
            return False
        try:
            self.helm("status", "logberg", f"--namespace={NS}")
        except AssertionError:
            return False
        try:
            self.outputs = {t: (self.home / f"{t}.out").read_text() for t in DEPLOY_STEPS}
        except OSError:
            return False
        return True

    def forget(self) -> None:
        """The deployment is about to change for good (uninstall): the next run redeploys."""
        self.stamp.unlink(missing_ok=True)


# -- what the tables should hold -----------------------------------------------------------


def truth(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows per day and rejects over every generator run so far."""
    days: dict[str, int] = {}
    for m in manifests:
        for day, v in m["days"].items():
            days[day] = days.get(day, 0) + v["valid"]
    return {
        "days": days,
        "valid": sum(m["totals"]["valid"] for m in manifests),
        "rejected": sum(m["totals"]["malformed_total"] for m in manifests),
        "files": sum(len(m["files"]) for m in manifests),
    }


COUNTS = """
SELECT 'day', CAST(date AS STRING), COUNT(*) FROM nginx_logs.access_logs GROUP BY date
UNION ALL SELECT 'rejects', '', COUNT(*) FROM nginx_logs.access_logs_rejects
UNION ALL SELECT 'dup_events', '', COUNT(*) - COUNT(DISTINCT event_id) FROM nginx_logs.access_logs
UNION ALL SELECT 'files', '', COUNT(DISTINCT source_file) FROM nginx_logs.access_logs
"""


def table_counts(d: Deployed) -> dict[str, Any]:
    rows = d.sql(COUNTS)
    return {
        "days": {r[1]: int(r[2]) for r in rows if r[0] == "day"},
        "rejected": next(int(r[2]) for r in rows if r[0] == "rejects"),
        "duplicates": next(int(r[2]) for r in rows if r[0] == "dup_events"),
        "files": next(int(r[2]) for r in rows if r[0] == "files"),
    }


def assert_exact(d: Deployed) -> dict[str, Any]:
    """Every generated line is in access_logs or the rejects, exactly once."""
    want = truth(d.manifests())
    got = table_counts(d)
    assert got["duplicates"] == 0, got
    assert got["days"] == want["days"], (got, want)
    assert sum(got["days"].values()) == want["valid"]
    assert got["rejected"] == want["rejected"], (got, want)
    assert got["files"] == want["files"], (got, want)
    return want


# -- logberg k8s, as a user runs it --------------------------------------------------------


def logberg_k8s(
    d: Deployed, *args: str, stdin: str | None = None, kubeconfig: Path | None = None,
    namespace: str = NS, context: str | None = CONTEXT, timeout: float = APP_TIMEOUT + 120,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    argv = [
        str(Path(sys.executable).parent / "logberg"),
        "k8s",
        f"--kubeconfig={kubeconfig or d.home / 'kubeconfig'}",
        f"--namespace={namespace}",
    ]
    if context:
        argv.append(f"--context={context}")
    return subprocess.run(
        [*argv, *args], cwd=REPO, env=d.env, input=stdin, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
