"""`logberg k8s` on a cluster without the Spark Operator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster.framework import (
    Cluster,
)
from tests.conftest import REPO

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
