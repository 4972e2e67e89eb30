"""logberg on a live Kubernetes cluster: the local cluster brought up by `make cluster-up`,
deployed by `make k8s-deploy`, demonstrated by `make k8s-demo`, exactly as the README says;
then the tables are checked against the generator's manifests and against the embedded
default, and the cluster is put through faults, a schedule, a password rotation, an upgrade
and an uninstall.

One cluster for the module (the deploy takes minutes); the tests run in file order and the
last one uninstalls. Every count is checked against the manifests of everything generated so
far, so a test holds whatever ran before it. Needs root, containerd, podman and the images
(`make test-images`): skipped with the reason otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from logberg.lakehouse import schema
from tests.conftest import REPO

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

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


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the local cluster needs root"
    for cmd in ("containerd", "ctr", "podman", "iptables"):
        if shutil.which(cmd) is None:
            return f"{cmd} is not installed"
    if subprocess.run(["podman", "image", "exists", "debian:bookworm-slim"]).returncode != 0:
        return "podman has no debian:bookworm-slim base image yet (make test-images makes it)"
    return None


# -- the deployed cluster ------------------------------------------------------------------


@dataclass
class Deployed:
    home: Path
    env: dict[str, str]
    kubectl_bin: str
    values: Path
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def make_vars(self) -> list[str]:
        return [
            "K8S_TARGET=local",
            f"CLUSTER_HOME={self.home}",
            f"CLUSTER_CONTEXT={CONTEXT}",
            f"K8S_NAMESPACE={NS}",
            f"OPERATOR_NAMESPACE={OPERATOR_NS}",
            f"K8S_VALUES=logberg={self.values}",
        ]

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
        helm = REPO / ".tools" / "bin" / "helm"
        proc = subprocess.run(
            [str(helm), f"--kubeconfig={self.home / 'kubeconfig'}", f"--kube-context={CONTEXT}",
             *args],
            capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        assert proc.returncode == 0, f"helm {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    # -- SQL through spark-sql in the cluster (the toolbox pod) ---------------------------
    def sql(self, statement: str) -> list[list[str]]:
        out = self.k("exec", "deploy/logberg-toolbox", "--", "spark-sql", "-S", "-e", statement)
        return [line.split("\t") for line in out.splitlines() if line.strip()]

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


def wait_for(what: str, check: Callable[[], bool], timeout: float = 600) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(2)
    return time.monotonic() - started


@pytest.fixture(scope="module")
def deployed() -> Iterator[Deployed]:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    home = Path(tempfile.mkdtemp(prefix="lbk8s-", dir="/tmp"))
    values = home / "logberg-values.yaml"
    values.write_text(yaml.safe_dump({"generator": {"args": DEMO_ARGS}}))
    version = _kube_version()
    env = dict(
        os.environ,
        LOGBERG_CLUSTER_HOME=str(home),
        LOGBERG_CLUSTER_CONTEXT=CONTEXT,
        LOGBERG_TOOLS=os.environ.get("LOGBERG_TOOLS", str(REPO / ".tools")),
    )
    kubectl = str(Path(env["LOGBERG_TOOLS"]).resolve() / "kubernetes" / version / "bin" / "kubectl")
    d = Deployed(home=home, env=env, kubectl_bin=kubectl, values=values)
    try:
        started = time.monotonic()
        d.outputs["cluster-up"] = d.make("cluster-up")
        d.outputs["k8s-deploy"] = d.make("k8s-deploy")
        deployed_at = time.monotonic()
        d.outputs["k8s-demo"] = d.make("k8s-demo")
        print(
            f"\ncluster up + deploy {deployed_at - started:.0f}s, "
            f"demo {time.monotonic() - deployed_at:.0f}s"
        )
        yield d
    finally:
        for ns in (NS, OPERATOR_NS):  # what the pods said, for a failure's post-mortem
            subprocess.run(
                [kubectl, f"--kubeconfig={home / 'kubeconfig'}", "-n", ns, "get", "pods", "-o",
                 "wide"], timeout=60,
            )  # fmt: skip
        subprocess.run(
            ["make", "--no-print-directory", "cluster-down", *d.make_vars],
            cwd=REPO, env=env, timeout=900,
        )  # fmt: skip
        shutil.rmtree(home, ignore_errors=True)


def _kube_version() -> str:
    import tomllib

    return str(
        tomllib.loads((REPO / "jobs/logberg/versions.toml").read_text())["kubernetes"]["version"]
    )


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


# -- the demo, as the README runs it ---------------------------------------------------------


def test_deploy_and_demo_ran_as_the_readme_says(deployed: Deployed) -> None:
    deploy = deployed.outputs["k8s-deploy"]
    for step in ("== images into the node", "spark-operator 2.5.2 (CRDs first)", "helm test"):
        assert step in deploy, deploy[-3000:]
    assert "--server-side" in deploy  # the CRDs are applied, not left to Helm
    assert "webhooks hold their CA bundle" in deploy
    demo = deployed.outputs["k8s-demo"]
    assert "kubectl apply -f charts/logberg/examples/ingest.yaml" in demo
    for app in ("logberg-ingest-example", "logberg-analytics-example"):
        assert f"SparkApplication {app}: COMPLETED" in demo, demo[-3000:]
    # The top tables, printed by spark-sql in the cluster (with their headers).
    for header in ("section\tdate\trank\tip_address", "section\tdate\trank\tdevice_type"):
        assert header in demo, demo[-3000:]
    assert len([ln for ln in demo.splitlines() if ln.startswith("top_ips\t")]) == 10
    assert re.search(r"^weekly\t2025\t2\t2025-01-06\t", demo, re.M), demo[-2000:]


def test_tables_equal_the_manifest(deployed: Deployed) -> None:
    [m] = deployed.manifests()  # the demo's generator Job, so far the only run
    assert m["totals"]["malformed_total"] > 0
    assert_exact(deployed)
    rows = deployed.sql(
        "SELECT 'ip', CAST(date AS STRING), ip_address, request_count, rank "
        "FROM nginx_logs.daily_top_ips "
        "UNION ALL SELECT 'device', CAST(date AS STRING), device_type, request_count, 0 "
        "FROM nginx_logs.daily_top_devices"
    )
    for day, expected in m["days"].items():
        ips = sorted((r for r in rows if r[0] == "ip" and r[1] == day), key=lambda r: int(r[4]))
        assert [[r[2], int(r[3])] for r in ips] == expected["top_ips"][:10], day
        devices = {r[2]: int(r[3]) for r in rows if r[0] == "device" and r[1] == day}
        assert devices == {k: v for k, v in expected["device_types"].items() if v}, day


def test_the_report_job_writes_its_page_next_to_the_tables(deployed: Deployed) -> None:
    """`logberg k8s submit report`: the chart's report application, run once, writes one
    self-contained page into the warehouse bucket, drawn from the gold tables."""
    r = logberg_k8s(deployed, "submit", "report", "--wait")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [name] = re.findall(r"SparkApplication (logberg-report-\S+) created", r.stdout)
    try:
        key = "warehouse/reports/logberg-report.html"
        page = deployed.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    finally:
        deployed.delete_app(name)
    assert not re.search(r"https?://", page), "an http(s) reference in the report"
    found = re.search(r'<script type="application/json" id="logberg-data">(.*?)</script>', page)
    assert found, page[:2000]
    data = json.loads(found.group(1))
    rows = deployed.sql(
        "SELECT CAST(date AS STRING), ip_address, request_count FROM nginx_logs.daily_top_ips "
        f"WHERE date BETWEEN DATE'{data['since']}' AND DATE'{data['until']}'"
    )
    shown = [
        (d, x["ip_address"], x["request_count"]) for d, xs in data["daily_ips"].items() for x in xs
    ]
    assert rows and sorted(shown) == sorted((d, ip, int(n)) for d, ip, n in rows)


def fingerprint_sql() -> str:
    """Every row of the data and gold tables as one string, without what depends on where
    or when it ran (event ids hash the file's URI; processing times; run ids)."""

    def rel(col: str) -> str:
        return f"regexp_extract({col}, 'raw/nginx/.*$', 0)"

    parts = []
    for table, skip in (
        (schema.ACCESS_LOGS, {"event_id", "processed_timestamp"}),
        (schema.REJECTS, {"run_id", "rejected_at"}),
        (schema.DAILY_TOP_IPS, {"processed_timestamp"}),
        (schema.WEEKLY_TOP_IPS, {"processed_timestamp"}),
        (schema.DAILY_TOP_DEVICES, {"processed_timestamp"}),
        (schema.WEEKLY_TOP_DEVICES, {"processed_timestamp"}),
        (schema.WEEKLY_ANALYTICS, {"processed_timestamp"}),
    ):
        cols = [
            rel(c) if c == "source_file" else f"CAST({c} AS STRING)"
            for c in table.names
            if c not in skip
        ]
        parts.append(
            f"SELECT '{table.name}' AS t, concat_ws('|', {', '.join(cols)}) AS r FROM {table}"
        )
    return " UNION ALL ".join(parts)


def test_tables_equal_what_the_embedded_default_makes_of_the_same_files(
    deployed: Deployed, fresh_namespace: Any, spark: Any, tmp_path: Path
) -> None:
    from logberg.pipeline.analytics import AnalyticsConfig, analytics
    from logberg.pipeline.ingest.batch import ingest
    from logberg.pipeline.ingest.config import IngestConfig

    [m] = deployed.manifests()
    client = deployed.s3()
    landing = tmp_path / "landing"
    for f in m["files"]:
        key = f"{LANDING}/{f['path']}"
        dest = landing / f["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(BUCKET, key, str(dest))
    ingest(spark, IngestConfig(inputs=(landing.as_uri(),)))
    analytics(spark, AnalyticsConfig())

    query = fingerprint_sql()
    local = sorted((r["t"], r["r"]) for r in spark.sql(query).collect())
    in_cluster = sorted((r[0], r[1]) for r in deployed.sql(query))
    assert len(local) > len(m["files"]) * 2000
    for table in sorted({t for t, _ in local}):
        a = [r for t, r in local if t == table]
        b = [r for t, r in in_cluster if t == table]
        assert a == b, f"{table}: {len(a)} rows here, {len(b)} in the cluster"


# -- what runs is what the charts promise ------------------------------------------------


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_every_live_pod_runs_hardened_and_non_root(deployed: Deployed) -> None:
    pods = [
        p
        for ns in (NS, OPERATOR_NS)
        for p in json.loads(deployed.kubectl("-n", ns, "get", "pods", "-o", "json"))["items"]
    ]
    kinds = {p["metadata"]["labels"].get("app.kubernetes.io/component", "") for p in pods}
    assert {"toolbox", "postgres", "s3", "generator"} <= kinds, kinds
    assert any(p["metadata"]["labels"].get("spark-role") == "driver" for p in pods)
    for p in pods:
        name, psc = p["metadata"]["name"], p["spec"].get("securityContext") or {}
        assert not p["spec"].get("hostNetwork") and not p["spec"].get("hostPID"), name
        for c in containers(p):
            sc = c.get("securityContext") or {}
            where = f"{name}/{c['name']}"
            assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, where
            assert sc.get("runAsUser", psc.get("runAsUser")) not in (0, None) or (
                p["metadata"]["namespace"] == OPERATOR_NS  # the image's USER 185
            ), where
            assert sc.get("allowPrivilegeEscalation") is False, where
            assert not sc.get("privileged"), where
            assert sc.get("capabilities", {}).get("drop") == ["ALL"], where
            assert sc.get("readOnlyRootFilesystem") is True, where
            seccomp = sc.get("seccompProfile") or psc.get("seccompProfile") or {}
            assert seccomp.get("type") == "RuntimeDefault", where
    # And the processes really run as those users: no container's uid 0.
    for p in pods:
        if p["status"].get("phase") != "Running":
            continue
        c = p["spec"]["containers"][0]["name"]
        uid = deployed.kubectl(
            "-n", p["metadata"]["namespace"], "exec", p["metadata"]["name"], "-c", c, "--",
            "cat", "/proc/1/status",
        )  # fmt: skip
        assert not re.search(r"^Uid:\s+0\b", uid, re.M), p["metadata"]["name"]


def test_secrets_reach_pods_only_through_secret_references(deployed: Deployed) -> None:
    secret_values = set()
    for s in json.loads(deployed.k("get", "secrets", "-o", "json"))["items"]:
        if s["type"] != "Opaque":
            continue
        for v in (s.get("data") or {}).values():
            value = base64.b64decode(v).decode(errors="replace")
            if len(value) >= 8:
                secret_values.add(value)
    assert len(secret_values) >= 3  # the database password and the two S3 keys
    pods = json.loads(deployed.k("get", "pods", "-o", "json"))["items"]
    apps = json.loads(deployed.k("get", "sparkapplications", "-o", "json"))["items"]
    configmaps = json.loads(deployed.k("get", "configmaps", "-o", "json"))["items"]
    for where, doc in [
        *((p["metadata"]["name"], p["spec"]) for p in pods),
        *((a["metadata"]["name"], a["spec"]) for a in apps),
        *((c["metadata"]["name"], c.get("data")) for c in configmaps),
    ]:
        text = json.dumps(doc)
        leaked = [v for v in secret_values if v in text]
        assert not leaked, f"{where} carries a secret value in plain text"
    for p in pods:
        for c in containers(p):
            for e in c.get("env", []):
                if re.search(r"PASSWORD|SECRET|ACCESS_KEY", e["name"]) and "_FILE" not in e["name"]:
                    assert "secretKeyRef" in e.get("valueFrom", {}), (p["metadata"]["name"], e)


# -- re-runs and faults --------------------------------------------------------------------


def test_reapplying_the_same_application_adds_nothing(deployed: Deployed) -> None:
    before = table_counts(deployed)
    deployed.delete_app("logberg-ingest-example")
    deployed.k("apply", "-f", str(EXAMPLES / "ingest.yaml"))
    deployed.wait_app("logberg-ingest-example")
    assert table_counts(deployed) == before
    assert_exact(deployed)


def running_executor(d: Deployed, name: str) -> bool:
    status = d.app_status(name)
    state = (status.get("applicationState") or {}).get("state")
    if state in ("COMPLETED", "FAILED"):
        raise AssertionError(f"{name} ended ({state}) before the fault could be injected")
    return "RUNNING" in (status.get("executorState") or {}).values()


def test_a_driver_deleted_mid_ingest_is_retried_and_the_table_stays_exact(
    deployed: Deployed,
) -> None:
    deployed.generate(
        "--num-files", "3", "--lines-per-file", "12000", "--start-date", "2025-01-13",
        "--end-date", "2025-01-15", "--seed", "101", "--malformed-rate", "0.005",
    )  # fmt: skip
    name = "fault-driver"
    deployed.apply_app(name)
    wait_for(f"{name}'s executor to run", lambda: running_executor(deployed, name))
    driver = deployed.app_status(name)["driverInfo"]["podName"]
    deployed.k("delete", "pod", driver, "--wait=false")
    deployed.wait_app(name)
    status = deployed.app_status(name)
    print(f"\n{name}: driver {driver} deleted; attempts {status.get('executionAttempts')}")
    assert int(status.get("executionAttempts") or 0) >= 2, status
    assert_exact(deployed)
    deployed.delete_app(name)


def test_a_metastore_deleted_during_a_run_never_half_commits(deployed: Deployed) -> None:
    deployed.generate(
        "--num-files", "3", "--lines-per-file", "12000", "--start-date", "2025-01-16",
        "--end-date", "2025-01-18", "--seed", "102", "--malformed-rate", "0.005",
    )  # fmt: skip
    name = "fault-metastore"
    deployed.apply_app(name)
    wait_for(f"{name}'s executor to run", lambda: running_executor(deployed, name))
    deployed.k("delete", "pod", "-l", METASTORE_PODS, "--wait=false")
    state = ""

    def ended() -> bool:
        nonlocal state
        state = (deployed.app_status(name).get("applicationState") or {}).get("state", "")
        return state in ("COMPLETED", "FAILED")

    wait_for(f"{name} to end", ended, timeout=APP_TIMEOUT)
    attempts = deployed.app_status(name).get("executionAttempts")
    print(f"\n{name}: the metastore pod deleted mid-run; ended {state} after {attempts} attempts")
    deployed.k("rollout", "status", "deploy/hive-metastore", "--timeout=600s")
    # Whatever that run did, each file is in the table whole or not at all...
    per_file = {
        r[0]: int(r[1])
        for r in deployed.sql(
            "SELECT regexp_extract(source_file, 'raw/nginx/.*$', 0), COUNT(*) "
            "FROM nginx_logs.access_logs GROUP BY source_file"
        )
    }
    expected = {f["path"]: f["valid"] for m in deployed.manifests() for f in m["files"]}
    for path, n in per_file.items():
        assert n == expected[path], (path, n, expected[path])
    # ...and one more ingest makes the table exact.
    if state != "COMPLETED" or set(per_file) != set(expected):
        deployed.delete_app(name)
        deployed.apply_app(name)
        deployed.wait_app(name)
    assert_exact(deployed)
    deployed.delete_app(name)


def test_two_ingests_submitted_at_once_land_every_line_once(deployed: Deployed) -> None:
    """ScheduledSparkApplications default to concurrencyPolicy Forbid; correctness must not
    depend on it: two applications of the same ingest, created together."""
    deployed.generate(
        "--num-files", "4", "--lines-per-file", "6000", "--start-date", "2025-01-19",
        "--end-date", "2025-01-20", "--seed", "103", "--malformed-rate", "0.005",
    )  # fmt: skip
    docs = []
    for name in ("twin-a", "twin-b"):
        doc = yaml.safe_load((EXAMPLES / "ingest.yaml").read_text())
        doc["metadata"]["name"] = name
        docs.append(doc)
    deployed.k(
        "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )
    for name in ("twin-a", "twin-b"):
        deployed.wait_app(name)
    assert_exact(deployed)
    runs = deployed.sql(
        "SELECT files, replaced_concurrent FROM nginx_logs.ingest_runs "
        "ORDER BY started_at DESC LIMIT 2"
    )
    files = sorted(int(r[0]) for r in runs)
    replaced = sum(int(r[1]) for r in runs if r[1] != "NULL")
    # Either the second found the files done (files=0), or it replaced the first's rows
    # (and says so): never both writers adding rows.
    assert files[1] == 4 and (files[0] == 0 or replaced == files[0]), runs
    for name in ("twin-a", "twin-b"):
        deployed.delete_app(name)


# -- schedules, rotation, upgrade, uninstall ------------------------------------------------


def test_a_scheduled_ingest_fires_and_records_its_run(deployed: Deployed) -> None:
    before = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=true", "--set=ingest.schedule=* * * * *",
        "--wait",
    )  # fmt: skip
    last = ""

    def fired() -> bool:
        nonlocal last
        s = deployed.obj("scheduledsparkapplication", "logberg-ingest").get("status") or {}
        last = s.get("lastRunName", "")
        return bool(last)

    wait_for("the schedule to fire", fired, timeout=240)
    deployed.wait_app(last)
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=false", "--wait",
    )  # fmt: skip
    after = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    assert after > before
    assert_exact(deployed)


def test_the_metastore_serves_again_after_the_database_password_rotates(
    deployed: Deployed,
) -> None:
    """What RDS rotation and External Secrets do: the database password changes, then the
    Secret follows. Nothing is restarted by hand; the metastore notices the mounted file."""
    [pod] = [
        p
        for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    pod_name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    user = deployed.secret("logberg-metastore-db", "username")
    new = secrets.token_urlsafe(24)
    deployed.k(
        "exec", "-i", "logberg-dev-postgres-0", "--", "/usr/local/lib/postgresql-bin/psql",
        "--host=/tmp", "--username=postgres", "--dbname=postgres", "--set=ON_ERROR_STOP=1",
        stdin=f"ALTER ROLE \"{user}\" PASSWORD '{new}';\n",
    )  # fmt: skip
    started = time.monotonic()
    patch = {"data": {"password": base64.b64encode(new.encode()).decode()}}
    deployed.k("patch", "secret", "logberg-metastore-db", "--type=merge", "-p", json.dumps(patch))

    def restarted_on_new_password() -> bool:
        log = deployed.k("logs", pod_name, check=False)
        return "the database accepts the new credentials: restarting the metastore" in log

    wait_for("the metastore to take the new password", restarted_on_new_password, timeout=300)
    # A real call that needs the database, over new connections only.
    deployed.helm("test", "hive-metastore", f"--namespace={NS}", "--timeout=300s")
    took = time.monotonic() - started
    same = deployed.obj("pod", pod_name)
    assert same["metadata"]["uid"] == uid  # the pod was not replaced...
    assert all(
        c["restartCount"] == 0 for c in same["status"]["containerStatuses"]
    )  # ...nor restarted
    assert took < 300
    # The jobs keep working through it.
    deployed.delete_app("logberg-analytics-example")
    deployed.k("apply", "-f", str(EXAMPLES / "analytics.yaml"))
    deployed.wait_app("logberg-analytics-example")


def test_a_helm_upgrade_rolls_the_metastore_and_leaves_the_schema_alone(
    deployed: Deployed,
) -> None:
    def schema_dump() -> str:
        out = deployed.k(
            "exec", "logberg-dev-postgres-0", "--", "/usr/local/lib/postgresql-bin/pg_dump",
            "--host=/tmp", "--username=postgres", "--schema-only", "metastore",
        )  # fmt: skip
        return re.sub(r"(?m)^\\(un)?restrict .*$", "", out)

    before_pods = {p["metadata"]["uid"] for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]}
    before = schema_dump()
    deployed.helm(
        "upgrade", "hive-metastore", str(REPO / "charts" / "hive-metastore"), f"--namespace={NS}",
        "--reuse-values", "--set=metastore.heapSizeMb=600", "--wait", "--timeout=900s",
    )  # fmt: skip
    after_pods = {
        p["metadata"]["uid"]
        for p in deployed.obj("pod", "-l", METASTORE_PODS)["items"]
        if not p["metadata"].get("deletionTimestamp")
    }
    assert after_pods and not after_pods & before_pods  # rolled
    assert schema_dump() == before  # the schema hook ran and changed nothing
    deployed.helm("test", "hive-metastore", f"--namespace={NS}", "--timeout=300s")


# -- logberg k8s: submit, status, logs, sql, and its errors -------------------------------


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


def test_submit_ingest_waits_and_the_rows_land(deployed: Deployed) -> None:
    deployed.generate(
        "--num-files", "2", "--lines-per-file", "4000", "--start-date", "2025-01-21",
        "--end-date", "2025-01-22", "--seed", "104", "--malformed-rate", "0.005",
    )  # fmt: skip
    r = logberg_k8s(deployed, "submit", "ingest", "--wait")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [name] = re.findall(r"SparkApplication (logberg-ingest-\S+) created", r.stdout)
    try:
        check_submitted_ingest(deployed, name, r.stdout)
    finally:
        deployed.delete_app(name)  # its driver pod would outlive the test otherwise


def check_submitted_ingest(deployed: Deployed, name: str, stdout: str) -> None:
    """What `logberg k8s submit ingest --wait` printed and left behind."""
    assert f"SparkApplication {name}: COMPLETED" in stdout
    # Plain lines when not on a terminal: every state it went through, once each.
    states = re.findall(rf"^{name}: (\w+)", stdout, re.M)
    assert "RUNNING" in states and states[-1] == "COMPLETED", states
    assert_exact(deployed)
    # The application is the chart's spec with a fresh name and the job's arguments.
    app = deployed.obj("sparkapplication", name)
    template = yaml.safe_load(deployed.obj("configmap", "logberg-apps")["data"]["ingest.yaml"])
    # The API server adds defaults of the CRD's schema (e.g. `deps: {}`): empty values only.
    defaulted = {k: v for k, v in app["spec"].items() if k not in template}
    assert all(v in ({}, [], None) for v in defaulted.values()), defaulted
    assert {k: v for k, v in app["spec"].items() if k in template} == template
    assert app["spec"]["arguments"][:3] == ["ingest", "--input", f"s3a://{BUCKET}/{LANDING}"]

    status = logberg_k8s(deployed, "status")
    assert status.returncode == 0, status.stderr
    rows = [ln for ln in status.stdout.splitlines() if f"| {name} " in ln]
    assert len(rows) == 1, status.stdout
    row = rows[0]
    assert "COMPLETED" in row and f"{name}-driver" in row
    logs = logberg_k8s(deployed, "logs", name)
    assert logs.returncode == 0, logs.stderr
    assert re.search(r"^ingest \w+: files=2 ", logs.stdout, re.M), logs.stdout[-2000:]


def test_sql_reads_piped_statements_through_the_toolbox(deployed: Deployed) -> None:
    r = logberg_k8s(
        deployed, "sql",
        stdin="SELECT COUNT(*) AS n FROM nginx_logs.access_logs;\nSELECT 1 + 1 AS two;\n",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    n = sum(table_counts(deployed)["days"].values())  # the same count, through kubectl exec
    assert lines == ["n", str(n), "two", "2"], lines


def test_doctor_checks_the_release_from_outside_and_inside(deployed: Deployed) -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "logberg"), "doctor", "--k8s", "--format=json",
         f"--kubeconfig={deployed.home / 'kubeconfig'}", f"--context={CONTEXT}",
         f"--namespace={NS}", "--operator-release=spark-operator"],
        cwd=REPO, env=deployed.env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    for name in ("spark-operator CRD", "spark-operator webhooks", "metastore pods", "metastore",
                 "commit lock", "warehouse"):  # fmt: skip
        assert checks[name]["status"] == "ok", checks[name]
    # The tables' metadata files, checked from inside the cluster.
    assert checks["table nginx_logs.access_logs"]["status"] == "ok", sorted(checks)
    assert checks["database"]["status"] == "skipped"  # the metastore alone has its password


def test_a_failing_job_exits_non_zero_with_the_drivers_error(deployed: Deployed) -> None:
    r = logberg_k8s(deployed, "submit", "analytics", "--wait", "--", "--top-n", "lots")
    assert r.returncode != 0
    assert "FAILED" in r.stderr, r.stderr[-3000:]
    assert "argument --top-n: invalid int value: 'lots'" in r.stderr  # the driver's own words
    [name] = re.findall(r"SparkApplication (logberg-analytics-\S+) created", r.stdout)
    deployed.delete_app(name)


def test_submit_errors_say_what_to_fix(deployed: Deployed, tmp_path: Path) -> None:
    """A namespace without the release, and a ServiceAccount whose RBAC may read the
    release's ConfigMap but not create SparkApplications."""
    ns = "lbnorbac"
    deployed.kubectl("create", "namespace", ns)
    try:
        r = logberg_k8s(deployed, "submit", "ingest", namespace=ns)
        assert r.returncode == 2
        assert f"release 'logberg' is not installed in namespace {ns}" in r.stderr, r.stderr

        template = deployed.obj("configmap", "logberg-apps")
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "logberg-apps", "namespace": ns},
            "data": template["data"],
        }
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "read-templates", "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        }
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read-templates", "namespace": ns},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "read-templates",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        }
        deployed.kubectl("-n", ns, "create", "serviceaccount", "reader")
        for doc in (cm, role, binding):
            deployed.kubectl("apply", "-f", "-", stdin=json.dumps(doc))
        token = deployed.kubectl("-n", ns, "create", "token", "reader").strip()
        admin = yaml.safe_load((deployed.home / "kubeconfig").read_text())
        cfg = tmp_path / "reader.kubeconfig"
        cfg.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"],
            "users": [{"name": "reader", "user": {"token": token}}],
            "contexts": [{"name": "reader", "context": {
                "cluster": admin["clusters"][0]["name"], "user": "reader"}}],
            "current-context": "reader",
        }))  # fmt: skip
        r = logberg_k8s(deployed, "submit", "ingest", kubeconfig=cfg, namespace=ns, context=None)
        assert r.returncode == 2
        assert "may not create sparkapplications.sparkoperator.k8s.io" in r.stderr, r.stderr
        assert f"namespace {ns}" in r.stderr and "Traceback" not in r.stderr
        r = logberg_k8s(deployed, "status", kubeconfig=cfg, namespace=ns, context=None)
        assert r.returncode == 2 and "may not list sparkapplications" in r.stderr, r.stderr
    finally:
        deployed.kubectl("delete", "namespace", ns, "--wait=false")


def test_uninstall_leaves_only_what_the_readme_says_it_keeps(deployed: Deployed) -> None:
    for name in ("logberg-ingest-example", "logberg-analytics-example"):
        deployed.delete_app(name)
    for release, ns in (
        ("logberg", NS),
        ("hive-metastore", NS),
        ("logberg-dev", NS),
        ("spark-operator", OPERATOR_NS),
    ):
        deployed.helm("uninstall", release, f"--namespace={ns}", "--wait", "--timeout=300s")
    readme = (REPO / "charts" / "README.md").read_text()
    kept = {"secret/logberg-metastore-db", "secret/logberg-s3", "pod/hive-metastore-test-thrift"}
    # What the operator makes at run time in its own namespace (not Helm's to delete).
    operator_kept = {
        "lease/spark-operator-controller-lock",
        "lease/spark-operator-webhook-lock",
        "secret/spark-operator-webhook-certs",
    }
    for thing in kept | operator_kept:
        assert f"`{thing}`" in readme, thing  # the README says so
    # Namespaced: nothing but those and what Kubernetes itself puts in every namespace.
    left = set()
    kinds = (
        "all,configmaps,secrets,serviceaccounts,roles,rolebindings,pvc,networkpolicies,pdb,"
        "jobs,leases,sparkapplications,scheduledsparkapplications"
    )

    others: dict[str, list[str]] = {}

    def only_the_test_pod_left(ns: str) -> bool:
        pods = json.loads(deployed.kubectl("-n", ns, "get", "pods", "-o", "json"))["items"]
        names = [p["metadata"]["name"] for p in pods]
        others[ns] = [n for n in names if n != "hive-metastore-test-thrift"]
        return not others[ns]

    for ns in (NS, OPERATOR_NS):
        try:
            wait_for(f"the pods of {ns} to go", partial(only_the_test_pod_left, ns), timeout=300)
        except AssertionError as e:
            raise AssertionError(f"{e}; still there: {others[ns]}") from None
        out = deployed.kubectl("-n", ns, "get", kinds, "-o", "name")
        left |= {
            ln.strip().replace(".coordination.k8s.io", "") for ln in out.splitlines() if ln.strip()
        }
    builtin = {"serviceaccount/default", "configmap/kube-root-ca.crt"}
    assert left - builtin == kept | operator_kept, left - builtin
    # Cluster-wide: the operator's webhooks and roles are gone; the CRDs stay (Helm never
    # deletes them, and deleting them would delete every SparkApplication).
    hooks = deployed.kubectl(
        "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "name"
    )
    assert "spark-operator" not in hooks
    roles = deployed.kubectl("get", "clusterroles,clusterrolebindings", "-o", "name")
    assert "spark-operator" not in roles
    assert "sparkapplications.sparkoperator.k8s.io" in deployed.kubectl("get", "crds", "-o", "name")
