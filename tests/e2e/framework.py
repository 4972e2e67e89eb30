"""The end-to-end tests' framework (tests/e2e/conftest.py holds the fixtures).

One kind cluster, NAME (LOGBERG_TEST_KIND_CLUSTER, default logberg-e2e, never a user's
`logberg`), made as the README says: `make kind-up` (the cluster, then k8s-deploy) and `make
k8s-demo`, with the release in namespace NS and the operator in OPERATOR_NS, so that every
name must follow K8S_NAMESPACE. Its kubeconfig is a file of the session's home (KUBECONFIG),
not the user's ~/.kube/config.

Each file runs alone: the fixture brings the cluster up, or reuses it when it runs and its
deployment is current (made from the same charts, images and code: `deployment_inputs`).
The session that brought it up takes it down at its end, unless LOGBERG_TEST_KEEP_CLUSTER=1
keeps it for the next run; a cluster found running is left running. The outputs of the
deploy steps are kept in the home, so a reused cluster is checked as a fresh one.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from logberg_platform.setup_artifacts import kubectl_path as tools_kubectl
from tests.conftest import REPO
from tests.e2e.kind import HOME, KEEP, NAME, NAMESPACE, OPERATOR_NAMESPACE, Kind
from tests.helpers.waiting import eventually

__all__ = ["KEEP"]


def tools() -> str:
    return os.environ.get("LOGBERG_TOOLS", str(REPO / ".tools"))


def kubectl_path() -> Path:
    return tools_kubectl(Path(tools()).resolve())  # `make tools`'


def wait_for(what: str, check: Callable[[], bool], timeout: float = 600, every: float = 2) -> float:
    """Poll a condition until it holds (tests/helpers/waiting); how long that took."""
    started = time.monotonic()
    eventually(what, check, timeout, every)
    return time.monotonic() - started


def wait_until(what: str, check: Callable[[], bool], timeout: float = 180) -> None:
    wait_for(what, check, timeout=timeout, every=1)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


# -- the deployed cluster ------------------------------------------------------------------

DEPLOY_HOME = HOME
NS = NAMESPACE

OPERATOR_NS = OPERATOR_NAMESPACE

CONTEXT = Kind(NAME).context

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

DEPLOY_STEPS = ("kind-up", "k8s-demo")
# What a deployment is made from: a change here makes a running deployment stale.
DEPLOY_INPUTS = ("charts", "images", "jobs", "generator", "Makefile", "pyproject.toml")


def deploy_env() -> dict[str, str]:
    """The make targets' and tools' environment: kind, kubectl and helm from the tools
    directory, the session's own kubeconfig."""
    return Kind(NAME).env() | {"LOGBERG_TOOLS": tools()}


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
class PortForward:
    """`kubectl port-forward` of a service's port to a free local one, until stopped."""

    proc: subprocess.Popen[str]
    port: int

    @classmethod
    def start(cls, d: Deployed, target: str, port: int) -> PortForward:
        proc = subprocess.Popen(
            [d.kubectl_bin, f"--kubeconfig={d.home / 'kubeconfig'}", "-n", NS, "port-forward",
             "--address=127.0.0.1", target, f":{port}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Forwarding from 127.0.0.1:NNNNN -> 7070"
        found = re.search(r"127\.0\.0\.1:(\d+) ->", line)
        if not found:
            proc.kill()
            raise AssertionError(f"kubectl port-forward {target}: {line!r}")
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # its later lines
        return cls(proc, int(found.group(1)))

    def stop(self) -> None:
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


def host_address() -> str:
    """This machine's address on its default route, which the kind node's pods reach
    through the node (the container engine's network routes to the host)."""
    out = subprocess.run(
        ["ip", "-4", "route", "get", "198.51.100.7"], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"\bsrc (\S+)", out)
    assert found, out
    return found.group(1)


@dataclass
class Deployed:
    home: Path
    env: dict[str, str]
    kubectl_bin: str
    values: Path
    outputs: dict[str, str] = field(default_factory=dict)
    gateway: str = ""  # the Pushgateway the release's jobs push to (conftest's)
    shell: SqlShell | None = field(default=None, repr=False)
    forwards: dict[str, PortForward] = field(default_factory=dict, repr=False)

    @property
    def make_vars(self) -> list[str]:
        return [
            *Kind(NAME).make_vars(),
            f"TOOLS={self.env['LOGBERG_TOOLS']}",
            f"K8S_KUBECONFIG={self.home / 'kubeconfig'}",
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

    @contextlib.contextmanager
    def pod_routes(self) -> Iterator[None]:
        """A route on this machine to the node's pod network, through the node's address
        (kind's node is a container: the host has no route to its pods), so that a
        Prometheus here scrapes pods at their own addresses, as one in the cluster does;
        removed after (root, as the route is the host's)."""
        node = self.kubectl("get", "nodes", "-o", "json")
        [item] = json.loads(node)["items"]
        [address] = [a["address"] for a in item["status"]["addresses"] if a["type"] == "InternalIP"]
        cidr = item["spec"]["podCIDR"]
        subprocess.run(["ip", "route", "replace", cidr, "via", address], check=True)
        try:
            yield
        finally:
            subprocess.run(["ip", "route", "del", cidr, "via", address], check=False)

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
        self.drop_forwards()

    def drop_forwards(self) -> None:
        """Stop the port-forwards (the next call starts them again, to the pods then)."""
        for forward in self.forwards.values():
            forward.stop()
        self.forwards.clear()

    # -- the dev S3 server, from this machine through `kubectl port-forward` ----------------
    # (its NetworkPolicy admits only labelled pods; a forwarded port enters its pod as
    # localhost, the way `make ui-k8s` reaches the History Server)
    def s3_endpoint(self) -> str:
        forward = self.forwards.get("s3")
        if forward is None or forward.proc.poll() is not None:
            forward = self.forwards["s3"] = PortForward.start(self, "svc/logberg-dev-s3", 7070)
        return f"http://127.0.0.1:{forward.port}"

    def s3(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint(),
            aws_access_key_id=self.secret("logberg-s3", "AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=self.secret("logberg-s3", "AWS_SECRET_ACCESS_KEY"),
            region_name="us-east-1",
        )

    def s3_env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": self.secret("logberg-s3", "AWS_ACCESS_KEY_ID"),
            "AWS_SECRET_ACCESS_KEY": self.secret("logberg-s3", "AWS_SECRET_ACCESS_KEY"),
            "AWS_REGION": "us-east-1",
            "S3_ENDPOINT": self.s3_endpoint(),
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
        if not Kind(NAME).running():
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
