"""`logberg k8s` against the release: submit, status, logs, sql, and its errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.e2e.framework import (
    BUCKET,
    LANDING,
    Deployed,
    assert_exact,
    logberg_k8s,
    table_counts,
)

# Every generated file ingested first (an earlier, interrupted run may have left some).
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("settled")]


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
    # Its JVM was handed the image's class archive; with the release's -Xshare:on it would
    # not have started had the node's copy of the image not let it map the archive.
    assert "entrypoint: the JVM maps the image's class archive" in logs.stdout, logs.stdout[:2000]


def test_sql_reads_piped_statements_through_the_toolbox(deployed: Deployed) -> None:
    r = logberg_k8s(
        deployed, "sql",
        stdin="SELECT COUNT(*) AS n FROM nginx_logs.access_logs;\nSELECT 1 + 1 AS two;\n",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    n = sum(table_counts(deployed)["days"].values())  # the same count, through kubectl exec
    assert lines == ["n", str(n), "two", "2"], lines


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
