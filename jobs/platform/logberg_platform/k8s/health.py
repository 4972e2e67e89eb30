"""`logberg doctor --k8s`: the platform on a cluster, checked from outside and from inside.

From outside, through the API: the Spark Operator's CRD and its webhooks' CA bundles, the
metastore's pods ready, the toolbox running. From inside: `logberg doctor` in the release's
toolbox pod, which reaches the metastore and the warehouse as the jobs do (the metastore's
own database is checked by the chart's schema Job and `helm test`, the only holders of its
credentials).
"""

from __future__ import annotations

import json
from typing import Any

from logberg.errors import ConfigError, ServiceError
from logberg_platform.k8s.api_client import Kube, exec_capture

Result = dict[str, str]  # name, status, detail, fix: the same shape as logberg doctor's


def _result(name: str, ok: bool, detail: str, fix: str = "") -> Result:
    return {"name": name, "status": "ok" if ok else "failed", "detail": detail, "fix": fix}


def api_checks(kube: Kube, release: str, operator_release: str) -> list[Result]:
    out = []
    try:
        kube.require_crd()
        out.append(_result("spark-operator CRD", True, "sparkapplications.sparkoperator.k8s.io"))
    except ConfigError as e:
        out.append(_result("spark-operator CRD", False, str(e), "make k8s-deploy"))
    try:
        ca = kube.webhooks_have_ca(operator_release)
        out.append(
            _result(
                "spark-operator webhooks",
                ca,
                "hold their CA bundle" if ca else "no CA bundle yet (or no webhook configured)",
                "" if ca else "wait for the operator's webhook pod, or make k8s-deploy",
            )
        )
    except ConfigError as e:  # RBAC may keep a namespace user from cluster-wide objects
        out.append(
            {"name": "spark-operator webhooks", "status": "skipped", "detail": str(e), "fix": ""}
        )
    pods = kube.call(
        "list pods",
        kube.core.list_namespaced_pod,
        kube.ns,
        label_selector="app.kubernetes.io/name=hive-metastore,app.kubernetes.io/component=metastore",
    ).items
    ready = [p.metadata.name for p in pods if _ready(p)]
    out.append(
        _result(
            "metastore pods",
            bool(ready),
            f"ready: {', '.join(ready)}" if ready else f"{len(pods)} pod(s), none ready",
            ""
            if ready
            else "kubectl logs deploy/hive-metastore (then logberg doctor on its database)",
        )
    )
    return out


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def inside(kube: Kube, toolbox: str) -> list[Result]:
    """`logberg doctor --format json` in the toolbox pod."""
    rc, out, err = exec_capture(
        kube, toolbox, "toolbox", ["logberg", "doctor", "--format", "json"], timeout=300
    )
    try:
        report: dict[str, Any] = json.loads(out)
    except ValueError:
        raise ServiceError(
            f"logberg doctor in pod {toolbox} gave no report (exit {rc}): {err.strip()[-2000:]}"
        ) from None
    return [dict(r) for r in report["checks"]]
