"""The apiserver calls a mutating webhook served by a pod (as the spark-operator's is)."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from logberg_platform.build.tools import go_build_env
from tests.cluster.framework import (
    Cluster,
    pod,
    unique,
    wait_until,
)
from tests.conftest import REPO

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


WEBHOOK_SRC = REPO / "tests" / "cluster_webhook"


@pytest.fixture(scope="module")
def webhook_image(cluster: Cluster) -> str:
    """tests/cluster_webhook built static with Go, in an image FROM the local Debian base."""
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        go = shutil.which("go") or "/usr/local/go/bin/go"
        subprocess.run(
            [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(ctx / "hook"), "."],
            cwd=WEBHOOK_SRC,
            env=go_build_env(),
            check=True,
            capture_output=True,
        )
        (ctx / "Dockerfile").write_text(
            "FROM debian:bookworm-slim\nCOPY --chmod=0555 hook /hook\nUSER 65532:65532\n"
            'ENTRYPOINT ["/hook"]\n'
        )
        digest = hashlib.sha256((ctx / "hook").read_bytes() + (ctx / "Dockerfile").read_bytes())
        ref = f"localhost/logberg-cluster-webhook:{digest.hexdigest()[:12]}"
        if subprocess.run(["podman", "image", "exists", ref]).returncode != 0:
            subprocess.run(
                ["podman", "--runtime", "runc", "build", "--pull=never", "-t", ref, str(ctx)],
                check=True,
                capture_output=True,
            )
    proc = cluster.cli("load", ref)
    assert proc.returncode == 0, proc.stderr
    return ref


def _tls_for(service_dns: str, folder: Path) -> None:
    """A throwaway CA and a serving certificate for the webhook Service."""

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    ssl("req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-days", "1",
        "-subj", "/CN=webhook-test-ca", "-keyout", "ca.key", "-out", "ca.crt")  # fmt: skip
    ssl("req", "-new", "-nodes", "-newkey", "rsa:2048", "-subj", f"/CN={service_dns}",
        "-keyout", "tls.key", "-out", "tls.csr")  # fmt: skip
    (folder / "ext.cnf").write_text(f"subjectAltName=DNS:{service_dns}\n")
    ssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "tls.crt")  # fmt: skip


def test_a_mutating_webhook_in_the_pod_network_is_called(
    cluster: Cluster, webhook_image: str
) -> None:
    """The apiserver calls a webhook Service backed by a pod (as the spark-operator's is)."""
    ns = unique("webhook")
    cluster.kubectl("create", "namespace", ns)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _tls_for(f"hook.{ns}.svc", folder)
        cluster.kubectl(
            "-n", ns, "create", "secret", "tls", "hook-tls",
            f"--cert={folder / 'tls.crt'}", f"--key={folder / 'tls.key'}",
        )  # fmt: skip
        ca_bundle = base64.b64encode((folder / "ca.crt").read_bytes()).decode()
    server = pod("hook", webhook_image, [])
    server["metadata"] = {"name": "hook", "namespace": ns, "labels": {"app": "hook"}}
    spec = server["spec"]
    spec["restartPolicy"] = "Always"  # type: ignore[index]
    spec["volumes"] = [{"name": "tls", "secret": {"secretName": "hook-tls"}}]  # type: ignore[index]
    main = spec["containers"][0]  # type: ignore[index]
    main["volumeMounts"] = [{"name": "tls", "mountPath": "/tls", "readOnly": True}]
    main["readinessProbe"] = {"tcpSocket": {"port": 8443}, "periodSeconds": 1}
    cluster.apply(server)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "hook", "namespace": ns},
            "spec": {"selector": {"app": "hook"}, "ports": [{"port": 443, "targetPort": 8443}]},
        }
    )
    config_name = f"logberg-test-{ns}"
    cluster.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": config_name},
            "webhooks": [
                {
                    "name": "label.logberg.test",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 10,
                    "clientConfig": {
                        "service": {
                            "name": "hook",
                            "namespace": ns,
                            "path": "/mutate",
                            "port": 443,
                        },
                        "caBundle": ca_bundle,
                    },
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                }
            ],
        }
    )
    try:
        wait_until(
            "the webhook pod to be ready",
            lambda: cluster.kubectl(
                "-n", ns, "get", "pod", "hook", "-o",
                "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False,
            ).strip() == "True",
        )  # fmt: skip

        def labelled() -> bool:
            name = unique("cm")
            out = cluster.kubectl("-n", ns, "create", "configmap", name, check=False)
            if "created" not in out:
                return False  # the webhook configuration or endpoints not yet in effect
            labels = cluster.kubectl(
                "-n", ns, "get", "configmap", name, "-o", "jsonpath={.metadata.labels}"
            )
            return "mutated" in labels

        wait_until("a ConfigMap labelled by the webhook", labelled)
        assert "mutated request" in cluster.kubectl("-n", ns, "logs", "hook")
    finally:
        cluster.kubectl("delete", "mutatingwebhookconfiguration", config_name, check=False)
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
