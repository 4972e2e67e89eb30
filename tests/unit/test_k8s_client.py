"""`logberg k8s` without a cluster: settings that fail fast naming themselves, and the errors
a user sees when no API server answers or the kubeconfig is wrong (a real HTTPS listener
that is not Kubernetes, and a closed port). The live cluster is tests/e2e/ (kind)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from logberg.errors import ConfigError
from logberg_platform.k8s.deploy import DeploySettings, version_alias
from logberg_platform.supervisor import free_port
from tests.conftest import REPO, run_logberg


def settings(**over: object) -> DeploySettings:
    base: dict[str, object] = {
        "target": "kind",
        "namespace": "logberg",
        "operator_namespace": "spark-operator",
        "repo": REPO,
        "chart_cache": REPO / ".tools" / "charts",
        "operator_chart_version": "2.5.2",
        "images": {"spark": "logberg-spark:0.1.0-abc"},
    }
    return DeploySettings(**{**base, **over})  # type: ignore[arg-type]  # test-only kwargs


@pytest.mark.parametrize(
    ("over", "named"),
    [
        ({"target": "minikube"}, "K8S_TARGET"),
        ({"target": "local"}, "K8S_TARGET"),  # the retired process cluster
        ({"operator_image": "latest"}, "SPARK_OPERATOR_IMAGE"),
        ({"target": "eks"}, "IMAGE_REGISTRY"),
        ({"metastore_namespace": "elsewhere"}, "METASTORE_NAMESPACE"),
        ({"values": {"logberg": [Path("/no/such/values.yaml")]}}, "K8S_VALUES"),
    ],
)
def test_deploy_settings_fail_fast_naming_the_setting(over: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        settings(**over)


def test_images_are_named_for_the_registry_and_the_version_tag() -> None:
    s = settings(target="eks", image_registry="123.dkr.ecr.eu-west-1.amazonaws.com/")
    assert s.repository("spark") == "123.dkr.ecr.eu-west-1.amazonaws.com/logberg-spark"
    assert settings().repository("spark") == "logberg-spark"
    assert settings().tag("spark") == "0.1.0-abc"
    with pytest.raises(ConfigError, match="make images"):
        settings().tag("hive-metastore")
    assert version_alias("logberg-spark:0.1.0-abc", "0.1.0") == "logberg-spark:0.1.0"
    assert (
        version_alias("reg:5000/logberg-spark:0.1.0-abc", "0.1.0") == "reg:5000/logberg-spark:0.1.0"
    )


def kubeconfig(path: Path, port: int, context: str = "test") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
                "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
                "current-context": context,
            }
        )
    )
    return path


@pytest.fixture
def not_kubernetes(tmp_path: Path) -> Iterator[int]:
    """An HTTPS server that answers every request with a connection reset."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)  # then close without an HTTP answer
            except (OSError, ssl.SSLError):
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield server.getsockname()[1]
    stop.set()
    t.join(timeout=5)
    server.close()


def test_no_api_server_answering_is_one_clear_line(tmp_path: Path) -> None:
    cfg = kubeconfig(tmp_path / "kubeconfig", free_port())
    r = run_logberg(["k8s", f"--kubeconfig={cfg}", "wait", "app", "x", "--timeout=5"])
    assert r.returncode == 2, r.stderr
    assert "no Kubernetes API answers at https://127.0.0.1:" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_server_that_is_not_kubernetes_is_one_clear_line(
    tmp_path: Path, not_kubernetes: int
) -> None:
    cfg = kubeconfig(tmp_path / "kubeconfig", not_kubernetes)
    r = run_logberg(["k8s", f"--kubeconfig={cfg}", "wait", "job", "x", "--timeout=5"])
    assert r.returncode == 2, r.stderr
    assert f"https://127.0.0.1:{not_kubernetes}" in r.stderr and "Traceback" not in r.stderr


def test_an_unknown_context_names_the_setting(tmp_path: Path) -> None:
    cfg = kubeconfig(tmp_path / "kubeconfig", free_port())
    r = run_logberg(["k8s", f"--kubeconfig={cfg}", "--context=nope", "wait", "app", "x"])
    assert r.returncode == 2
    assert "K8S_CONTEXT" in r.stderr and "nope" in r.stderr


def test_k8s_query_with_no_api_server_answering_is_one_clear_line(tmp_path: Path) -> None:
    cfg = kubeconfig(tmp_path / "kubeconfig", free_port())
    r = run_logberg(["k8s", f"--kubeconfig={cfg}", "query", "SELECT 1"])
    assert r.returncode == 2, r.stderr
    assert "no Kubernetes API answers at https://127.0.0.1:" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_sql_text_splits_at_semicolons_outside_quotes_and_comments() -> None:
    from logberg_platform.k8s.connect import complete, statements

    text = "SELECT 'a;b' AS x; -- c;d\nSELECT 2;/* ; */ SELECT \"q;\" ;\n SELECT `w;`"
    assert statements(text) == ["SELECT 'a;b' AS x", "SELECT 2", 'SELECT "q;"', "SELECT `w;`"]
    assert statements("SELECT 'it\\'s;'; ;;") == ["SELECT 'it\\'s;'"]
    assert complete("SELECT 1;") and complete("SELECT ';';  ")
    assert not complete("SELECT ';") and not complete("SELECT 1 -- ;")


def _connect_obj(env: list[dict[str, object]]) -> dict[str, object]:
    container = {
        "name": "spark-kubernetes-driver",
        "env": env,
        "ports": [{"name": "spark-connect", "containerPort": 15010}],
    }
    return {
        "metadata": {"name": "rel-connect"},
        "spec": {"server": {"template": {"spec": {"containers": [container]}}}},
        "status": {"state": "Ready", "server": {"podName": "rel-connect-server"}},
    }


def test_a_connect_server_is_reached_only_with_its_secrets_token() -> None:
    from logberg.errors import ConfigError
    from logberg_platform.k8s.connect import server_of

    ref = {"secretKeyRef": {"name": "tok", "key": "k"}}
    s = server_of(_connect_obj([{"name": "SPARK_CONNECT_AUTHENTICATE_TOKEN", "valueFrom": ref}]))
    assert (s.name, s.pod, s.port, s.secret, s.key) == (
        "rel-connect", "rel-connect-server", 15010, "tok", "k",
    )  # fmt: skip
    assert "the Secret tok (key k" in s.setting
    with pytest.raises(ConfigError, match="takes no token from a Secret"):
        server_of(_connect_obj([{"name": "SPARK_CONNECT_AUTHENTICATE_TOKEN", "value": "plain"}]))


def test_a_job_run_again_keeps_its_spec_and_owner_and_drops_what_the_server_filled_in() -> None:
    from logberg_platform.k8s.api_client import job_spec_again

    uid = "0b6c3c1e-5d3e-4b7a-9b53-2f0c3e1d2a10"
    served: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "logberg-generator",
            "namespace": "logberg",
            "uid": uid,
            "resourceVersion": "4711",
            "creationTimestamp": "2026-11-28T10:00:00Z",
            "managedFields": [{"manager": "helm"}],
            "labels": {"app.kubernetes.io/component": "generator", "controller-uid": uid},
            "annotations": {"meta.helm.sh/release-name": "logberg"},
        },
        "spec": {
            "backoffLimit": 2,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "template": {
                "metadata": {
                    "creationTimestamp": None,
                    "labels": {
                        "app.kubernetes.io/component": "generator",
                        "batch.kubernetes.io/controller-uid": uid,
                        "batch.kubernetes.io/job-name": "logberg-generator",
                        "controller-uid": uid,
                        "job-name": "logberg-generator",
                    },
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "g", "image": "x"}]},
            },
        },
        "status": {"succeeded": 1, "completionTime": "2026-11-28T10:01:00Z"},
    }
    again = job_spec_again(served)
    assert again == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "logberg-generator",
            "namespace": "logberg",
            "labels": {"app.kubernetes.io/component": "generator"},
            "annotations": {"meta.helm.sh/release-name": "logberg"},
        },
        "spec": {
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/component": "generator"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "g", "image": "x"}]},
            },
        },
    }
    assert uid not in str(again)
    manual = job_spec_again({**served, "spec": {**served["spec"], "manualSelector": True}})
    assert manual["spec"]["selector"] == served["spec"]["selector"]


def test_a_stream_is_followed_by_its_topic_and_checkpoint_arguments() -> None:
    from logberg_platform.k8s.apps import stream_source

    def app(*args: str) -> dict[str, object]:
        return {"metadata": {"name": "s"}, "spec": {"arguments": list(args)}}

    assert stream_source(app("ingest", "--from", "kafka:///t")) == ("kafka:///t", None)
    assert stream_source(
        app("ingest", "--from", "kafka://b:9092/t", "--checkpoint", "s3a://b/cp")
    ) == ("kafka://b:9092/t", "s3a://b/cp")
    files = ("ingest", "--follow", "--input", "s3a://b/l")
    for args in (files, ("analytics",), ("ingest", "--from")):
        with pytest.raises(ConfigError, match="SparkApplication s: not a stream from a topic"):
            stream_source(app(*args))
