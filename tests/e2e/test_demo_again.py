"""`logberg k8s wait job --rerun-before-pods` (what `make k8s-demo` runs) after the dev S3
server lost its objects, as a server without a volume does (`s3.persistence.enabled=false`:
an emptyDir) when its pod is replaced: the generator Job the cluster still holds as complete
runs again, and writes the same files. The release's S3 moves to an emptyDir here (a helm
upgrade of logberg-dev), which empties the store: in a whole run it goes just before
test_uninstall; alone, it deploys first. The next session deploys afresh."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from tests.conftest import REPO
from tests.e2e.framework import BUCKET, NS, Deployed, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

GENERATOR = "app.kubernetes.io/instance=logberg,app.kubernetes.io/component=generator"
DEV_S3 = "app.kubernetes.io/instance=logberg-dev,app.kubernetes.io/component=s3"


def generator_job(d: Deployed) -> dict[str, Any]:
    [job] = d.obj("jobs", "-l", GENERATOR)["items"]
    return dict(job)


def s3_serving(d: Deployed) -> bool:
    """One dev S3 pod, ready, and its Service routing to it: a real S3 call answers. (A
    ready pod alone is not enough: until the Service's endpoints name the new pod, its
    address refuses connections.)"""
    pods = d.obj("pods", "-l", DEV_S3)["items"]
    ready = len(pods) == 1 and all(
        c.get("ready") for c in pods[0].get("status", {}).get("containerStatuses") or [{}]
    )
    if not ready:
        return False
    try:
        d.s3().list_buckets()
    except EndpointConnectionError:
        return False
    return True


def test_a_generator_job_older_than_the_s3_server_runs_again(deployed: Deployed) -> None:
    wait = ["wait", "job", f"--selector={GENERATOR}", f"--rerun-before-pods={DEV_S3}",
            "--timeout=900"]  # fmt: skip
    # The generator's files are there and its Job completed after the server started: kept.
    out = deployed.logberg_k8s(*wait)
    assert "running it again" not in out, out
    before, job = deployed.demo_manifest(), generator_job(deployed)

    deployed.forget()  # the release changes for good: the next session deploys afresh
    deployed.helm(
        "upgrade", "logberg-dev", str(REPO / "charts" / "logberg-dev"), f"--namespace={NS}",
        "--reuse-values", "--set", "s3.persistence.enabled=false", "--wait", "--timeout=600s",
    )  # fmt: skip
    deployed.drop_forwards()  # a port-forward ends with its pod
    wait_for("a new dev S3 server, serving", lambda: s3_serving(deployed), timeout=300)
    # The upgrade's hook made the bucket again, on the new server: the objects stayed on
    # the old pod's volume.
    assert BUCKET in [b["Name"] for b in deployed.s3().list_buckets()["Buckets"]]
    assert not deployed.manifests()

    out = deployed.logberg_k8s(*wait)
    assert "running it again" in out, out
    again = generator_job(deployed)
    assert again["metadata"]["uid"] != job["metadata"]["uid"]
    labels = again["metadata"].get("labels", {})
    assert labels.get("app.kubernetes.io/managed-by") == "Helm", labels  # still the release's
    after = deployed.demo_manifest()
    for key in ("files", "days", "weeks", "totals"):
        assert after[key] == before[key], key
