"""What runs is what the charts promise: hardened, non-root pods; secrets only through
Secret references."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from tests.e2e.framework import (
    NS,
    OPERATOR_NS,
    Deployed,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
    assert {"toolbox", "postgres", "s3", "kafka", "generator"} <= kinds, kinds
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
