"""`logberg doctor --k8s`: the release checked from outside and inside the cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.framework import (
    CONTEXT,
    NS,
    Deployed,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
