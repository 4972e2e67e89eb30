"""Workloads on the local cluster: a mounted Secret follows its changes, a Job reads the
API with its ServiceAccount within its RBAC."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.cluster.framework import (
    Cluster,
    phase,
    pod,
    unique,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
    wait_until(f"pod {name} running", lambda: phase(cluster, name) == "Running")

    def mounted() -> str:
        return cluster.kubectl("exec", name, "--", "cat", "/etc/rotated/token", check=False)

    assert mounted().strip() == first
    patch = json.dumps({"stringData": {"token": second}})
    cluster.kubectl("patch", "secret", name, "--type=merge", "-p", patch)
    wait_until("the kubelet to refresh the mounted Secret", lambda: mounted().strip() == second)
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

    wait_until("the Job to finish", finished)
    log = cluster.kubectl("-n", ns, "logs", "job/worker")
    assert f"msg={nonce}" in log, log
    assert "secrets-forbidden" in log and "SECRETS-LISTED" not in log, log
    conds = cluster.kubectl(
        "-n", ns, "get", "job", "worker", "-o", "jsonpath={.status.conditions[*].type}"
    )
    assert "Complete" in conds
    cluster.kubectl("delete", "namespace", ns, "--wait=false")
