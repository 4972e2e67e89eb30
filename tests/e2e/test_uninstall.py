"""Uninstalling leaves only what charts/README.md says it keeps; without the CRDs too,
`logberg k8s` says the operator is missing. Runs last in a whole run (before
test_kind_down.py); alone, it deploys (or reuses a current deployment) first, and
afterwards the next run deploys afresh."""

from __future__ import annotations

import json
from functools import partial

import pytest

from tests.conftest import REPO
from tests.e2e.framework import (
    NS,
    OPERATOR_NS,
    Deployed,
    logberg_k8s,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_uninstall_leaves_only_what_the_readme_says_it_keeps(deployed: Deployed) -> None:
    deployed.forget()  # whatever happens next, the next run deploys afresh
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
    kept = {
        "secret/logberg-metastore-db",
        "secret/logberg-s3",
        "pod/hive-metastore-test-thrift",
        # The dev StatefulSets' volumes (their volumeClaimTemplates': never Helm's to delete).
        "persistentvolumeclaim/data-logberg-dev-postgres-0",
        "persistentvolumeclaim/data-logberg-dev-kafka-0",
    }
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

    # A user who then deletes the CRDs as well (charts/README.md) has a cluster without the
    # Spark Operator: `logberg k8s` names the CRD and what to do, without a traceback.
    crds = [
        ln.strip()
        for ln in deployed.kubectl("get", "crds", "-o", "name").splitlines()
        if ln.strip().endswith(".sparkoperator.k8s.io")
    ]
    deployed.kubectl("delete", *crds, "--wait=true", "--timeout=300s")
    proc = logberg_k8s(deployed, "status")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the CRD sparkapplications.sparkoperator.k8s.io is not installed" in proc.stderr
    assert "make k8s-deploy" in proc.stderr and "Traceback" not in proc.stderr
