"""Static checks of the Kubernetes side: charts, rendered manifests, kind path, make targets.

No cluster and no container engine: helm lint/template, kubernetes-validate (1.31 schemas),
structural checks of the Spark Operator CRDs, secret scans and checkov.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml

pytestmark = pytest.mark.static

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "charts"
HELM = REPO / ".tools" / "bin" / "helm"
CHECKOV = REPO / ".tools" / "checkov-venv" / "bin" / "checkov"
K8S_VERSION = "1.31.0"
NAMESPACE = "logberg"
PINS = tomllib.loads((REPO / "jobs" / "logberg" / "versions.toml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

# Values that make the hive-metastore chart renderable with its defaults (it refuses to
# render without a database host and Secret, on purpose).
HMS_REQUIRED = ("database.host=pg.example", "database.existingSecret=metastore-db")
# chart -> {label: (values files, --set overrides)}
VARIANTS: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "hive-metastore": {
        "default": ((), HMS_REQUIRED),
        "kind": (("values-kind.yaml",), ()),
        "eks": (("values-eks.yaml",), ()),
    },
    "logberg": {
        "default": ((), ()),
        # values-kind.yaml runs no job by itself (the demo applies the examples): turn the
        # one-off applications on, as the examples are rendered.
        "kind": (("values-kind.yaml",), ("ingest.enabled=true", "analytics.enabled=true")),
        "eks": (("values-eks.yaml",), ()),
        "all-on": (
            ("values-kind.yaml",),
            (
                "ingest.enabled=true",
                "analytics.enabled=true",
                "streaming.enabled=true",
                "maintenance.enabled=true",
                "spark.dynamicAllocation.enabled=true",
            ),
        ),
        # The Spark Connect server (off by default), with its generated token Secret.
        "connect": (("values-kind.yaml",), ("connect.enabled=true", "ingest.enabled=true")),
        # Metrics pushed to a Pushgateway, the alert rules and the drivers' PodMonitor.
        "monitoring": (
            ("values-kind.yaml",),
            (
                "ingest.enabled=true",
                "monitoring.pushgatewayUrl=http://pushgateway.monitoring:9091",
                "monitoring.prometheusRule.enabled=true",
                "monitoring.podMonitor.enabled=true",
            ),
        ),
        # Kafka: the stream from the dev broker's topic, the generator producing to it.
        "kafka": (
            ("values-kind.yaml",),
            ("streaming.enabled=true", "streaming.source=kafka", "generator.output=kafka"),
        ),
        # Event logs to S3 and Spark's History Server reading them.
        "history": (
            ("values-kind.yaml",),
            (
                "ingest.enabled=true",
                "connect.enabled=true",
                "eventLog.enabled=true",
                "historyServer.enabled=true",
                "historyServer.cleanerMaxAge=7d",
            ),
        ),
    },
    "logberg-dev": {
        "default": ((), ()),
        # No volume provisioner: every backend on an emptyDir.
        "ephemeral": (
            (),
            tuple(f"{b}.persistence.enabled=false" for b in ("postgres", "s3", "kafka")),
        ),
    },
}
CASES = [(c, v) for c, vs in VARIANTS.items() for v in vs]
CASE_IDS = [f"{c}-{v}" for c, v in CASES]

if not HELM.is_file():
    pytest.skip("helm not in .tools/bin (run `make tools`)", allow_module_level=True)


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(HELM), *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _args(chart: str, files: tuple[str, ...], sets: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for f in files:
        out += ["-f", str(CHARTS / chart / f)]
    for s in sets:
        out += ["--set", s]
    return out


@functools.cache
def render(chart: str, files: tuple[str, ...] = (), sets: tuple[str, ...] = ()) -> str:
    release = {
        "hive-metastore": "hive-metastore",
        "logberg": "logberg",
        "logberg-dev": "logberg-dev",
    }[chart]
    return helm(
        "template", release, str(CHARTS / chart), "-n", NAMESPACE, *_args(chart, files, sets)
    ).stdout


def docs(
    chart: str, files: tuple[str, ...] = (), sets: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(render(chart, files, sets)) if d]


def variant_docs(chart: str, variant: str) -> list[dict[str, Any]]:
    files, sets = VARIANTS[chart][variant]
    return docs(chart, files, sets)


def by_kind(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in items if d["kind"] == kind]


def one(items: list[dict[str, Any]], kind: str, name_suffix: str = "") -> dict[str, Any]:
    found = [d for d in by_kind(items, kind) if d["metadata"]["name"].endswith(name_suffix)]
    assert len(found) == 1, (
        f"expected one {kind} *{name_suffix}, got {[d['metadata']['name'] for d in found]}"
    )
    return found[0]


def generator_job(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The generator Job (its name ends with a hash of what it runs)."""
    [job] = [
        d
        for d in by_kind(items, "Job")
        if d["metadata"]["labels"].get("app.kubernetes.io/component") == "generator"
    ]
    assert re.fullmatch(r"logberg-generator-[0-9a-f]{8}", job["metadata"]["name"])
    return job


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    if doc["kind"] == "Pod":
        return doc["spec"]
    return doc["spec"]["template"]["spec"]


WORKLOADS = ("Deployment", "StatefulSet", "Job", "Pod", "DaemonSet")


# --------------------------------------------------------------------------- lint/validate
@pytest.mark.parametrize(("chart", "variant"), CASES, ids=CASE_IDS)
def test_helm_lint_strict(chart: str, variant: str) -> None:
    files, sets = VARIANTS[chart][variant]
    proc = helm("lint", "--strict", str(CHARTS / chart), *_args(chart, files, sets), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "[WARNING]" not in out and "[ERROR]" not in out, out


@pytest.mark.parametrize(("chart", "variant"), CASES, ids=CASE_IDS)
def test_builtin_kinds_validate_against_k8s_131(chart: str, variant: str) -> None:
    import kubernetes_validate

    for doc in variant_docs(chart, variant):
        if doc["apiVersion"].startswith(("sparkoperator.k8s.io/", "monitoring.coreos.com/")):
            continue  # custom resources (the operators' CRDs)
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {e.message} at {list(e.path)}")


def test_hive_metastore_refuses_to_render_without_database() -> None:
    proc = helm("template", "hms", str(CHARTS / "hive-metastore"), check=False)
    assert proc.returncode != 0
    assert "database.host is required" in proc.stderr
    proc = helm(
        "template", "hms", str(CHARTS / "hive-metastore"), "--set", HMS_REQUIRED[0], check=False
    )
    assert proc.returncode != 0 and "database.existingSecret is required" in proc.stderr


def test_values_schema_rejects_unknown_keys() -> None:
    for chart in VARIANTS:
        proc = helm("template", "x", str(CHARTS / chart), "--set", "noSuchValue=1", check=False)
        assert proc.returncode != 0, chart
        assert "noSuchValue" in proc.stderr, proc.stderr


def test_ingest_and_streaming_read_the_landing_by_logs_values() -> None:
    """`logs.*` reach both readers of the landing as the CLI's own flags, which the CLI
    checks; the schema refuses X-Forwarded-For without trusted proxies."""
    ingress = '$remote_addr - [$time_local] "$request" $status $request_time'
    items = docs(
        "logberg",
        (),
        (
            "streaming.enabled=true",
            f"logs.format={ingress}",
            "logs.clientIp=x-forwarded-for",
            "logs.trustedProxies={10.0.0.0/16,fd00::/8}",
        ),
    )
    want = ["--log-format", ingress, "--client-ip", "x-forwarded-for",
            "--trusted-proxies", "10.0.0.0/16,fd00::/8"]  # fmt: skip
    ingest = one(items, "ScheduledSparkApplication", "-ingest")["spec"]["template"]
    assert ingest["arguments"][3:] == want
    assert one(items, "SparkApplication", "-streaming")["spec"]["arguments"][4:] == want
    from logberg.pipeline.logformat import ClientRule, compile_format

    assert compile_format(want[1]).name == "custom"  # what the job will accept
    assert ClientRule.parse(want[3], want[5]).trusted == ("10.0.0.0/16", "fd00::/8")
    for bad in (("logs.clientIp=x-forwarded-for",), ("logs.trustedProxies={10.0.0.0/8}",)):
        proc = helm("template", "x", str(CHARTS / "logberg"), "--set", bad[0], check=False)
        assert proc.returncode != 0 and "/logs" in proc.stderr, (bad, proc.stderr)


def test_the_pushgateway_url_holds_no_credentials() -> None:
    """It lands in a ConfigMap: the schema refuses a user or password in it."""
    url = "monitoring.pushgatewayUrl=http://user:secret@pushgateway:9091"
    proc = helm("template", "x", str(CHARTS / "logberg"), "--set", url, check=False)
    assert proc.returncode != 0 and "/monitoring/pushgatewayUrl" in proc.stderr, proc.stderr


def test_the_report_goes_only_to_object_storage() -> None:
    """A path would land inside the driver pod and vanish with it."""
    proc = helm("template", "x", str(CHARTS / "logberg"), "--set", "report.output=/tmp/r.html",
                check=False)  # fmt: skip
    assert proc.returncode != 0 and "/report/output" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ SparkApplication shape
SPARK_POD_KEYS = {
    "cores",
    "coreRequest",
    "initContainers",
    "coreLimit",
    "memory",
    "memoryOverhead",
    "serviceAccount",
    "labels",
    "annotations",
    "env",
    "envFrom",
    "nodeSelector",
    "tolerations",
    "podSecurityContext",
    "securityContext",
    "volumeMounts",
    "instances",
}
SPEC_KEYS = {
    "type",
    "pythonVersion",
    "mode",
    "image",
    "imagePullPolicy",
    "imagePullSecrets",
    "mainApplicationFile",
    "arguments",
    "sparkVersion",
    "sparkConf",
    "restartPolicy",
    "timeToLiveSeconds",
    "dynamicAllocation",
    "volumes",
    "driver",
    "executor",
}


def check_spark_app_spec(spec: dict[str, Any], where: str) -> None:
    """The v1beta2 required fields and the types the CRD's schema declares."""
    for key in (
        "type",
        "mode",
        "image",
        "mainApplicationFile",
        "sparkVersion",
        "driver",
        "executor",
        "restartPolicy",
    ):
        assert key in spec, f"{where}: spec.{key} missing"
    assert set(spec) <= SPEC_KEYS, f"{where}: unexpected spec keys {set(spec) - SPEC_KEYS}"
    assert spec["type"] in ("Java", "Python", "Scala", "R")
    assert spec["mode"] in ("cluster", "client")
    assert spec["pythonVersion"] in ("2", "3")
    assert spec["sparkVersion"] == PINS["spark"]["version"]
    assert spec["mainApplicationFile"] == "local:///opt/logberg/spark_entry.py"
    assert isinstance(spec["arguments"], list) and all(
        isinstance(a, str) for a in spec["arguments"]
    )
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in spec["sparkConf"].items()), (
        f"{where}: sparkConf must be a map of strings"
    )
    rp = spec["restartPolicy"]
    assert rp["type"] in ("Never", "OnFailure", "Always")
    for key in ("onFailureRetries", "onSubmissionFailureRetries"):
        if key in rp:
            assert isinstance(rp[key], int) and rp[key] >= 0
    for key in ("onFailureRetryInterval", "onSubmissionFailureRetryInterval"):
        if key in rp:
            assert isinstance(rp[key], int) and rp[key] >= 1
    volumes = {v["name"] for v in spec.get("volumes", [])}
    for role in ("driver", "executor"):
        pod = spec[role]
        assert set(pod) <= SPARK_POD_KEYS, (
            f"{where}.{role}: unexpected keys {set(pod) - SPARK_POD_KEYS}"
        )
        assert isinstance(pod["cores"], int) and pod["cores"] >= 1
        assert isinstance(pod["memory"], str) and re.fullmatch(r"\d+[kmgt]?", pod["memory"])
        assert isinstance(pod["coreLimit"], str)
        assert pod["serviceAccount"]
        for m in pod.get("volumeMounts", []):
            assert m["name"] in volumes, f"{where}.{role}: mount of unknown volume {m['name']}"
        # The embedded core/v1 types must be valid: check them inside a Pod.
        fake = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "x",
                "labels": pod.get("labels", {}),
                "annotations": pod.get("annotations", {}),
            },
            "spec": {
                "securityContext": pod.get("podSecurityContext", {}),
                "nodeSelector": pod.get("nodeSelector", {}),
                "tolerations": pod.get("tolerations", []),
                "volumes": spec.get("volumes", []),
                "containers": [
                    {
                        "name": "spark",
                        "image": spec["image"],
                        "env": pod.get("env", []),
                        "securityContext": pod.get("securityContext", {}),
                        "volumeMounts": pod.get("volumeMounts", []),
                    }
                ],
            },
        }
        import kubernetes_validate

        kubernetes_validate.validate(fake, K8S_VERSION, strict=True)
    assert spec["executor"]["instances"] >= 1
    if "dynamicAllocation" in spec:
        da = spec["dynamicAllocation"]
        assert da["enabled"] is True and da["minExecutors"] <= da["maxExecutors"]


def spark_apps(items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for d in items:
        if d["kind"] == "SparkApplication":
            out.append((d["metadata"]["name"], d["spec"]))
        elif d["kind"] == "ScheduledSparkApplication":
            out.append((d["metadata"]["name"], d["spec"]["template"]))
    return out


@pytest.mark.parametrize("variant", list(VARIANTS["logberg"]))
def test_spark_applications_have_v1beta2_required_fields(variant: str) -> None:
    items = variant_docs("logberg", variant)
    apps = spark_apps(items)
    assert apps, "no SparkApplications rendered"
    for d in items:
        if d["apiVersion"].startswith("sparkoperator.k8s.io"):
            # v1beta2 applications; the Spark Connect server is the operator's v1alpha1.
            want = "v1alpha1" if d["kind"] == "SparkConnect" else "v1beta2"
            assert d["apiVersion"] == f"sparkoperator.k8s.io/{want}"
            assert d["metadata"]["namespace"] == NAMESPACE
        if d["kind"] == "ScheduledSparkApplication":
            spec = d["spec"]
            assert set(spec) <= {
                "schedule",
                "template",
                "suspend",
                "concurrencyPolicy",
                "successfulRunHistoryLimit",
                "failedRunHistoryLimit",
            }
            assert len(spec["schedule"].split()) == 5 or spec["schedule"].startswith("@")
            assert spec["concurrencyPolicy"] in ("Allow", "Forbid", "Replace")
    for name, spec in apps:
        check_spark_app_spec(spec, name)


def test_jobs_toggle_and_schedule() -> None:
    default = docs("logberg")
    assert {d["metadata"]["name"] for d in by_kind(default, "ScheduledSparkApplication")} == {
        "logberg-ingest",
        "logberg-analytics",
        "logberg-maintenance",
        "logberg-report",
    }
    assert not by_kind(default, "SparkApplication"), "streaming is off by default"
    one_off = docs(
        "logberg",
        (),
        (
            "ingest.schedule=",
            "analytics.enabled=false",
            "maintenance.enabled=false",
            "report.enabled=false",
        ),
    )
    app = one(one_off, "SparkApplication", "-ingest")
    assert app["spec"]["arguments"] == [
        "ingest", "--input", "s3a://logberg/landing",
        "--log-format", "combined", "--client-ip", "remote_addr",
    ]  # fmt: skip
    assert app["spec"]["restartPolicy"]["type"] == "OnFailure"
    assert app["spec"]["restartPolicy"]["onFailureRetries"] >= 1
    assert not by_kind(one_off, "ScheduledSparkApplication")
    sched = one(default, "ScheduledSparkApplication", "-maintenance")
    assert sched["spec"]["template"]["arguments"][0] == "maintain"
    report = one(default, "ScheduledSparkApplication", "-report")
    assert report["spec"]["template"]["arguments"] == ["report"]  # next to the tables
    analytics = one(default, "ScheduledSparkApplication", "-analytics")
    after = report["spec"]["schedule"].split()[:2], analytics["spec"]["schedule"].split()[:2]
    assert after == (["45", "1"], ["15", "1"]), "the report runs after analytics"
    placed = docs("logberg", (), ("report.output=s3a://reports/logberg/index.html",))
    report = one(placed, "ScheduledSparkApplication", "-report")
    assert report["spec"]["template"]["arguments"] == [
        "report", "--output", "s3a://reports/logberg/index.html",
    ]  # fmt: skip


def test_streaming_ingest_restarts_always() -> None:
    items = docs("logberg", (), ("streaming.enabled=true",))
    app = one(items, "SparkApplication", "-streaming")
    assert app["spec"]["arguments"][:4] == [
        "ingest",
        "--follow",
        "--input",
        "s3a://logberg/landing",
    ]
    assert app["spec"]["restartPolicy"]["type"] == "Always"
    assert "timeToLiveSeconds" not in app["spec"]


def test_spark_conf_matches_session_catalog_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart's sparkConf carries lakehouse.session.catalog_conf for the same settings."""
    from logberg.lakehouse.session import JIT_OPTIONS, LakehouseConfig, catalog_conf

    values = yaml.safe_load((CHARTS / "logberg" / "values-kind.yaml").read_text())
    want = catalog_conf(
        LakehouseConfig(
            metastore_uri=values["metastore"]["uri"],
            warehouse=values["warehouse"]["uri"],
            s3_endpoint=values["s3"]["endpoint"],
            s3_path_style=values["s3"]["pathStyleAccess"],
            s3_region=values["s3"]["region"],
        )
    )
    for name, spec in spark_apps(variant_docs("logberg", "kind")):
        conf = spec["sparkConf"]
        missing = {k: v for k, v in want.items() if conf.get(k) != v}
        assert not missing, f"{name}: sparkConf differs from catalog_conf on {missing}"
        for role in ("driver", "executor"):
            assert conf[f"spark.{role}.extraJavaOptions"] == JIT_OPTIONS, name
        for role in ("driver", "executor"):
            env = {e["name"]: e for e in spec[role]["env"]}
            assert env["LOGBERG_PROFILE"]["value"] == "cluster"
            assert env["LOGBERG_METASTORE_URI"]["value"] == values["metastore"]["uri"]
            assert env["LOGBERG_WAREHOUSE"]["value"] == values["warehouse"]["uri"]
            assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "logberg-s3"
    toolbox = one(variant_docs("logberg", "kind"), "ConfigMap", "-toolbox")
    lines = dict(
        line.split(" ", 1) for line in toolbox["data"]["spark-defaults.conf"].splitlines() if line
    )
    assert {k: lines.get(k) for k in want} == want


def test_java_options_follow_the_charts_own_in_every_spark_jvm() -> None:
    """spark.javaOptions goes after the chart's JIT options (the later of two wins), in
    every application, the Spark Connect server's and the toolbox's conf; a value that is
    not options is refused by the schema, naming it."""
    from logberg.lakehouse.session import JIT_OPTIONS

    files, sets = VARIANTS["logberg"]["kind"]
    items = docs("logberg", files, (*sets, "spark.javaOptions=-XX:TieredStopAtLevel=1"))
    apps = spark_apps(items)
    assert apps
    for name, spec in apps:
        for role in ("driver", "executor"):
            got = spec["sparkConf"][f"spark.{role}.extraJavaOptions"]
            assert got == f"{JIT_OPTIONS} -XX:TieredStopAtLevel=1", name
    toolbox = one(items, "ConfigMap", "-toolbox")["data"]["spark-defaults.conf"]
    assert f"spark.driver.extraJavaOptions {JIT_OPTIONS} -XX:TieredStopAtLevel=1" in toolbox
    refused = helm(
        "template",
        "logberg",
        str(CHARTS / "logberg"),
        "--set",
        "spark.javaOptions=Tiered",
        check=False,
    )
    assert refused.returncode != 0 and "javaOptions" in refused.stderr


def test_metrics_rbac_spot_and_service_account() -> None:
    items = variant_docs("logberg", "eks")
    for name, spec in spark_apps(items):
        assert spec["sparkConf"]["spark.ui.prometheus.enabled"] == "true"
        assert (
            "PrometheusServlet"
            in spec["sparkConf"]["spark.metrics.conf.*.sink.prometheusServlet.class"]
        )
        assert spec["driver"]["annotations"]["prometheus.io/scrape"] == "true"
        # eks/'s tainted spark node group (tests/static/test_eks.py checks the match with eks.tf).
        assert spec["executor"]["nodeSelector"] == {"logberg.io/pool": "spark"}
        assert spec["executor"]["tolerations"][0]["key"] == "logberg.io/spark"
        assert spec["dynamicAllocation"]["maxExecutors"] == 20
        assert "AWS_SECRET_ACCESS_KEY" not in {e["name"] for e in spec["driver"]["env"]}, name
    role = one(items, "Role")
    rules = {r: set(rule["verbs"]) for rule in role["rules"] for r in rule["resources"]}
    for resource in ("pods", "services", "configmaps", "persistentvolumeclaims"):
        assert {"create", "get", "list", "watch", "delete"} <= rules[resource], resource
    binding = one(items, "RoleBinding")
    sa = one(items, "ServiceAccount")
    assert binding["subjects"][0]["name"] == sa["metadata"]["name"] == "logberg-spark"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    annotated = docs(
        "logberg",
        ("values-eks.yaml",),
        (
            "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::123456789012:role/spark",
        ),
    )
    assert one(annotated, "ServiceAccount")["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/spark"
    }


def test_generator_job_and_toolbox() -> None:
    items = variant_docs("logberg", "kind")
    job = generator_job(items)
    c = pod_spec(job)["containers"][0]
    assert c["command"] == [
        "python3",
        "/opt/logberg/spark_entry.py",
        "generate",
        "--output",
        "s3://logberg/landing",
        "--endpoint-url",
        "http://logberg-dev-s3:7070",
        "--quiet",
    ]
    assert "--seed" in c["args"]
    # It starts only once the landing bucket exists (no race with the dev backends).
    [wait] = pod_spec(job)["initContainers"]
    assert wait["command"][:2] == ["logberg", "wait-ready"]
    assert wait["command"][2:4] == ["--input", "s3a://logberg/landing"]
    assert wait["securityContext"]["runAsNonRoot"] is True
    toolbox = one(items, "Deployment", "-toolbox")
    labels = toolbox["spec"]["template"]["metadata"]["labels"]
    assert labels["logberg.io/metastore-client"] == "true"
    assert docs("logberg", (), ("toolbox.enabled=false",))
    assert not [
        d for d in docs("logberg", (), ("toolbox.enabled=false",)) if d["kind"] == "Deployment"
    ]


# ------------------------------------------------------------------------ secrets/hardening
SECRET_PATTERN = re.compile(
    r"(?i)(password|passwd|secret[._-]?key|access[._-]?key|session[._-]?token|AKIA[0-9A-Z]{16}|"
    r"aws_secret|BEGIN [A-Z ]*PRIVATE KEY)"
)


def _secret_mount_paths(doc: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """Where `container` mounts the pod's Secret volumes."""
    secret_volumes = {v["name"] for v in pod_spec(doc).get("volumes", []) if "secret" in v}
    return [
        m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] in secret_volumes
    ]


@pytest.mark.parametrize(("chart", "variant"), CASES, ids=CASE_IDS)
def test_no_credentials_in_configmaps_or_rendered_secrets(chart: str, variant: str) -> None:
    items = variant_docs(chart, variant)
    # Charts render no Secret with a credential from values: those come from existingSecret.
    # The one exception is the Spark Connect token the chart generates itself (random, kept
    # across upgrades by lookup): test_spark_connect_token_comes_from_a_secret.
    rendered = [d["metadata"]["name"] for d in by_kind(items, "Secret")]
    assert rendered in ([], ["logberg-connect-token"]), rendered
    for cm in by_kind(items, "ConfigMap"):
        for key, text in cm.get("data", {}).items():
            if cm["metadata"]["name"].endswith("-apps"):
                # SparkApplication specs for `logberg k8s submit`: a credential may appear
                # only by name, as a reference to a Secret key.
                spec = yaml.safe_load(text)
                for role in ("driver", "executor"):
                    for env in spec[role].get("env", []):
                        if SECRET_PATTERN.search(env["name"]):
                            assert "value" not in env, (key, env)
                            assert "secretKeyRef" in env["valueFrom"], (key, env)
                text = "\n".join(
                    line
                    for line in text.splitlines()
                    if not re.fullmatch(r"\s*((- name|key): [A-Z_]+|secretKeyRef:)", line)
                )
            hit = SECRET_PATTERN.search(text)
            assert not hit, f"ConfigMap {cm['metadata']['name']}/{key} mentions {hit.group(0)!r}"
    for d in items:
        for c in pod_containers(d):
            secret_dirs = _secret_mount_paths(d, c)
            for env in c.get("env", []):
                if env["name"].endswith("_FILE"):
                    # a path, which must lie in a mounted Secret volume
                    assert any(env["value"].startswith(f"{p}/") for p in secret_dirs), env
                elif SECRET_PATTERN.search(env["name"]) or env["name"].endswith("PASSWORD"):
                    assert "valueFrom" in env and "secretKeyRef" in env["valueFrom"], (
                        f"{d['metadata']['name']}: {env['name']} must come from a Secret"
                    )


def test_extra_properties_refuse_credentials() -> None:
    proc = helm(
        "template",
        "hms",
        str(CHARTS / "hive-metastore"),
        *[a for s in HMS_REQUIRED for a in ("--set", s)],
        "--set",
        "extraProperties.fs\\.s3a\\.secret\\.key=x",
        check=False,
    )
    assert proc.returncode != 0 and "looks like a credential" in proc.stderr


def pod_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] not in WORKLOADS:
        return []
    spec = pod_spec(doc)
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize(("chart", "variant"), CASES, ids=CASE_IDS)
def test_pods_are_hardened(chart: str, variant: str) -> None:
    for d in variant_docs(chart, variant):
        if d["kind"] not in WORKLOADS:
            continue
        spec = pod_spec(d)
        name = d["metadata"]["name"]
        psc = spec.get("securityContext", {})
        assert psc.get("runAsNonRoot") is True, f"{name}: pod runAsNonRoot"
        assert psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", name
        assert spec.get("automountServiceAccountToken") is False, f"{name}: no API token needed"
        for c in pod_containers(d):
            sc = c.get("securityContext", {})
            assert sc.get("allowPrivilegeEscalation") is False, f"{name}/{c['name']}"
            assert sc.get("readOnlyRootFilesystem") is True, f"{name}/{c['name']}"
            assert sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}/{c['name']}"
            assert "resources" in c and c["resources"].get("limits"), f"{name}/{c['name']}: limits"
            assert sc.get("privileged") in (None, False)
    for name, spec in spark_apps([d for d in variant_docs(chart, variant)]):
        for role in ("driver", "executor"):
            sc = spec[role]["securityContext"]
            assert spec[role]["podSecurityContext"]["runAsNonRoot"] is True
            assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
            assert sc["readOnlyRootFilesystem"] is True, f"{name}.{role}"


# ---------------------------------------------------------------------- hive-metastore chart
def test_metastore_probes_pdb_networkpolicy() -> None:
    items = variant_docs("hive-metastore", "kind")
    dep = one(items, "Deployment")
    c = pod_spec(dep)["containers"][0]
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["thrift"]
    assert port == 9083
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert c[probe]["tcpSocket"]["port"] in ("thrift", 9083), probe
    svc = one(items, "Service")
    assert svc["spec"]["ports"][0]["port"] == 9083
    selector = dep["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["selector"] == selector
    pdb = one(items, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    policies = by_kind(items, "NetworkPolicy")
    allow = [p for p in policies if p["spec"].get("ingress")]
    assert len(allow) == 1
    rule = allow[0]["spec"]["ingress"][0]
    assert rule["from"][0]["podSelector"]["matchLabels"] == {"logberg.io/metastore-client": "true"}
    assert rule["ports"][0]["port"] in ("thrift", 9083)
    assert allow[0]["spec"]["podSelector"]["matchLabels"] == selector
    # Every client the logberg chart runs carries the label the policy admits.
    lb = variant_docs("logberg", "kind")
    for name, spec in spark_apps(lb):
        for role in ("driver", "executor"):
            assert spec[role]["labels"]["logberg.io/metastore-client"] == "true", name
    off = docs(
        "hive-metastore", (), (*HMS_REQUIRED, "networkPolicy.enabled=false", "pdb.enabled=false")
    )
    assert not by_kind(off, "NetworkPolicy") and not by_kind(off, "PodDisruptionBudget")
    two = docs("hive-metastore", ("values-eks.yaml",))
    assert one(two, "Deployment")["spec"]["replicas"] == 2


def test_existing_secret_drives_the_mounted_credentials() -> None:
    """The DB credentials are files of a Secret volume (updated in place on rotation; the
    image's entrypoint reads METASTORE_DB_*_FILE), in the metastore and the schema Job."""
    items = docs(
        "hive-metastore",
        ("values-kind.yaml",),
        (
            "database.existingSecret=other-db",
            "database.usernameKey=user",
            "database.passwordKey=pw",
        ),
    )
    for kind, suffix in (("Deployment", ""), ("Job", "-schema")):
        pod = pod_spec(one(items, kind, suffix))
        c = pod["containers"][0]
        env = {e["name"]: e for e in c["env"]}
        assert "METASTORE_DB_USER" not in env and "METASTORE_DB_PASSWORD" not in env
        [volume] = [
            v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == "other-db"
        ]
        assert {i["key"] for i in volume["secret"]["items"]} == {"user", "pw"}
        [mount] = [m for m in c["volumeMounts"] if m["name"] == volume["name"]]
        assert mount["readOnly"] and "subPath" not in mount
        assert env["METASTORE_DB_USER_FILE"]["value"] == f"{mount['mountPath']}/user"
        assert env["METASTORE_DB_PASSWORD_FILE"]["value"] == f"{mount['mountPath']}/pw"
    site = next(
        d for d in by_kind(items, "ConfigMap") if not d["metadata"]["name"].endswith("-schema")
    )["data"]["metastore-site.xml"]
    assert "other-db" not in site and "ConnectionPassword" not in site
    assert site.startswith("<?xml"), "the XML declaration must start the file"


def test_schema_hook_job() -> None:
    items = variant_docs("hive-metastore", "kind")
    job = one(items, "Job", "-schema")
    ann = job["metadata"]["annotations"]
    assert ann["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in ann["helm.sh/hook-delete-policy"]
    spec = pod_spec(job)
    assert spec["containers"][0]["args"] == ["schema"]
    assert spec["restartPolicy"] == "Never"
    cm_name = next(v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v)
    hook_cm = one(items, "ConfigMap", "-schema")
    assert hook_cm["metadata"]["name"] == cm_name
    assert "pre-install" in hook_cm["metadata"]["annotations"]["helm.sh/hook"]
    assert (
        hook_cm["data"]
        == one([d for d in items if not d["metadata"]["name"].endswith("-schema")], "ConfigMap")[
            "data"
        ]
    )
    assert pod_spec(one(items, "Deployment"))["containers"][0]["args"] == ["metastore"]
    # The schema Job's schematool is a metastore JVM too: it gets the same extra options.
    files, sets = VARIANTS["hive-metastore"]["kind"]
    opts = docs("hive-metastore", files, (*sets, "metastore.extraJavaOpts=-XX:TieredStopAtLevel=1"))
    for kind in ("Job", "Deployment"):
        env = {e["name"]: e.get("value") for e in pod_spec(one(opts, kind))["containers"][0]["env"]}
        assert env["METASTORE_EXTRA_JAVA_OPTS"] == "-XX:TieredStopAtLevel=1", kind
    derby = docs("hive-metastore", (), ("database.type=derby",))
    assert not [d for d in derby if d["kind"] == "Job"]
    assert pod_spec(one(derby, "Deployment"))["containers"][0]["args"] == ["all"]
    proc = helm(
        "template",
        "x",
        str(CHARTS / "hive-metastore"),
        "--set",
        "database.type=derby",
        "--set",
        "replicaCount=2",
        check=False,
    )
    assert proc.returncode != 0 and "Derby" in proc.stderr


def test_helm_test_pod_calls_the_metastore() -> None:
    items = variant_docs("hive-metastore", "kind")
    pod = one(items, "Pod", "-test-thrift")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["metadata"]["labels"]["logberg.io/metastore-client"] == "true"
    cmd = pod["spec"]["containers"][0]["command"]
    assert cmd[:2] == ["python3", "-c"] and "get_all_databases" in cmd[2]
    assert cmd[3] == "hive-metastore.logberg.svc" and cmd[4] == "9083" and cmd[5] == "default"


class _FakeMetastore(threading.Thread):
    """Answers one get_all_databases call in the thrift binary protocol."""

    def __init__(self, dbs: list[str]) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.dbs = dbs
        self.request = b""

    def run(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            name = b"get_all_databases"
            want = 4 + 4 + len(name) + 4 + 1
            while len(self.request) < want:
                self.request += conn.recv(want - len(self.request))
            body = (
                bytes([15]) + struct.pack("!h", 0) + bytes([11]) + struct.pack("!i", len(self.dbs))
            )
            for d in self.dbs:
                body += struct.pack("!i", len(d)) + d.encode()
            body += b"\x00"
            conn.sendall(
                struct.pack("!I", 0x80010002)
                + struct.pack("!i", len(name))
                + name
                + struct.pack("!i", 1)
                + body
            )
        self.sock.close()


@pytest.mark.parametrize(("dbs", "rc"), [(["default", "nginx_logs"], 0), (["other"], 1)])
def test_thrift_probe_speaks_the_binary_protocol(dbs: list[str], rc: int) -> None:
    server = _FakeMetastore(dbs)
    server.start()
    proc = subprocess.run(
        [
            sys.executable,
            str(CHARTS / "hive-metastore" / "files" / "thrift_probe.py"),
            "127.0.0.1",
            str(server.port),
            "default",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    server.join(10)
    assert proc.returncode == rc, proc.stderr
    assert server.request.startswith(struct.pack("!I", 0x80010001))
    assert b"get_all_databases" in server.request
    if rc == 0:
        assert "default, nginx_logs" in proc.stdout


# --------------------------------------------------------------------- versions, docs, kind
def test_chart_versions_agree_with_pins() -> None:
    def chart(name: str) -> dict[str, Any]:
        return yaml.safe_load((CHARTS / name / "Chart.yaml").read_text())

    assert chart("hive-metastore")["appVersion"] == PINS["hive"]["version"]
    lb = chart("logberg")
    assert lb["appVersion"] == PYPROJECT["project"]["version"]
    assert lb["annotations"]["logberg.io/spark-version"] == PINS["spark"]["version"]
    assert (
        lb["annotations"]["logberg.io/spark-operator-chart"]
        == PINS["kubernetes"]["spark_operator_chart"]
    )
    values = yaml.safe_load((CHARTS / "logberg" / "values.yaml").read_text())
    assert values["spark"]["version"] == PINS["spark"]["version"]
    assert values["image"]["tag"] == ""
    assert (
        yaml.safe_load((CHARTS / "hive-metastore" / "values.yaml").read_text())["image"]["tag"]
        == ""
    )
    dev = chart("logberg-dev")
    assert dev["appVersion"] == PYPROJECT["project"]["version"]
    dev_values = yaml.safe_load((CHARTS / "logberg-dev" / "values.yaml").read_text())
    for key in ("postgres", "s3", "bucketJob"):
        assert dev_values[key]["image"]["tag"] == "", key  # the deploy sets the content tag
    assert PINS["kubernetes"]["spark_operator"] == "v" + PINS["kubernetes"]["spark_operator_chart"]
    assert pin_spark_pyproject() == PINS["spark"]["version"]
    kind = yaml.safe_load((CHARTS / "kind" / "kind-config.yaml").read_text())
    assert {n["image"] for n in kind["nodes"]} == {PINS["kubernetes"]["kind_node_image"]}


def pin_spark_pyproject() -> str:
    dep = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("pyspark"))
    return dep.split("==")[1]


def test_spark_operator_overrides() -> None:
    values = yaml.safe_load((CHARTS / "values" / "spark-operator.yaml").read_text())
    # The namespace comes from K8S_NAMESPACE (the deploy flow sets it), never from this file.
    assert "jobNamespaces" not in values["spark"]
    assert values["webhook"]["enable"] is True
    assert values["prometheus"]["metrics"]["enable"] is True
    deploy = (REPO / "jobs" / "platform" / "logberg_platform" / "k8s" / "deploy.py").read_text()
    assert "spark.jobNamespaces[0]=" in deploy and "spark-operator.yaml" in deploy
    assert not list(CHARTS.glob("**/spark-operator*.tgz")), "the upstream chart is not vendored"


def test_no_namespace_is_written_into_values_or_examples() -> None:
    """Any K8S_NAMESPACE works: services by short name, examples applied with -n."""
    examples = [p for p in (CHARTS / "logberg" / "examples").rglob("*") if p.is_file()]
    for path in [*CHARTS.glob("*/values*.yaml"), *examples]:
        text = path.read_text()
        assert not re.search(r"\.logberg\.svc|namespace: logberg", text), path


def _documented(path: Path) -> list[str]:
    """Keys of a values.yaml without a `# --` comment on them or on an ancestor."""
    undocumented: list[str] = []
    stack: list[tuple[int, bool]] = []
    comment = False
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            comment = True
            continue
        if stripped.startswith("#") or not stripped:
            continue
        m = re.match(r"^(\s*)([A-Za-z0-9_.\-/]+):", line)
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        covered = comment or any(doc for _, doc in stack)
        if not covered:
            rest = line.split(":", 1)[1].strip()
            if rest:  # a leaf without documentation
                undocumented.append(m.group(2))
        stack.append((indent, comment))
        comment = False
    return undocumented


@pytest.mark.parametrize("chart", list(VARIANTS))
def test_every_value_is_documented_and_schema_valid(chart: str) -> None:
    import jsonschema

    assert _documented(CHARTS / chart / "values.yaml") == []
    schema = json.loads((CHARTS / chart / "values.schema.json").read_text())
    for name in ("values.yaml", "values-kind.yaml", "values-eks.yaml"):
        path = CHARTS / chart / name
        if path.exists():
            merged = deep_merge(
                yaml.safe_load((CHARTS / chart / "values.yaml").read_text()),
                yaml.safe_load(path.read_text()),
            )
            jsonschema.validate(merged, schema)
    for f in ("NOTES.txt", "_helpers.tpl"):
        assert (CHARTS / chart / "templates" / f).is_file()


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = (
            deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        )
    return out


@pytest.mark.parametrize("chart", list(VARIANTS))
def test_helpers_are_namespaced_and_labels_standard(chart: str) -> None:
    helpers = (CHARTS / chart / "templates" / "_helpers.tpl").read_text()
    for name in re.findall(r'define "([^"]+)"', helpers):
        assert name.startswith(chart + "."), name
    for d in variant_docs(chart, next(iter(VARIANTS[chart]))):
        labels = d["metadata"].get("labels", {})
        for key in (
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ):
            assert key in labels, f"{d['kind']}/{d['metadata']['name']}: {key}"


@pytest.mark.parametrize(
    "path", sorted((CHARTS / "logberg" / "examples").glob("*.yaml")), ids=lambda p: p.name
)
def test_examples_are_plain_spark_applications_matching_the_chart(path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("render_examples", CHARTS / "render_examples.py")
    assert spec and spec.loader
    render_examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_examples)
    doc = yaml.safe_load(path.read_text())
    assert doc["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and doc["kind"] == "SparkApplication"
    assert "{{" not in path.read_text()
    assert "namespace" not in doc["metadata"] and doc["metadata"]["name"].endswith("-example")
    check_spark_app_spec(doc["spec"], path.name)
    component = doc["metadata"]["labels"]["app.kubernetes.io/component"]
    rendered = docs("logberg", ("values-kind.yaml",), render_examples.SETS)
    _, expected = render_examples.example(one(rendered, "SparkApplication", f"-{component}"))
    assert doc == expected, f"{path.name} drifted from the chart: make k8s-examples"


def _make_targets() -> set[str]:
    """Targets of the Makefile and of every file it includes."""
    makefile = REPO / "Makefile"
    included = re.findall(r"^-?include\s+(\S+)", makefile.read_text(), re.M)
    targets: set[str] = set()
    for mk in (makefile, *(REPO / name for name in included)):
        targets |= set(re.findall(r"^([A-Za-z0-9_.-]+):", mk.read_text(), re.M))
    return targets


def test_readme_make_targets_exist() -> None:
    readme = (CHARTS / "README.md").read_text()
    mentioned = set(re.findall(r"\bmake ([a-z0-9][a-z0-9_-]*)", readme))
    assert {
        "k8s-deploy",
        "k8s-demo",
        "kind-up",
        "kind-down",
        "kind-node-image",
        "sql-k8s",
    } <= mentioned
    missing = mentioned - _make_targets()
    assert not missing, f"README mentions make targets that do not exist: {missing}"


def test_k8s_mk_targets_have_help_and_tools_fallbacks() -> None:
    # charts/k8s.mk, with the images' targets and the shared tools and checkov it uses.
    makefiles = (REPO / "Makefile", CHARTS / "k8s.mk", REPO / "images" / "images.mk")
    mk = "".join(path.read_text() for path in makefiles)
    for line in mk.splitlines():
        m = re.match(r"^([a-z0-9-]+):(?!=)", line)
        if m:
            assert "## " in line, f"target {m.group(1)} has no ## description"
    for target in (
        "images",
        "k8s-deploy",
        "k8s-demo",
        "k8s-examples",
        "kind-up",
        "kind-demo",
        "kind-down",
        "sql-k8s",
        "checkov",
    ):
        assert re.search(rf"^{target}:.*## ", mk, re.M), target
    assert "$(TOOLS)/bin/helm" in mk and "$(TOOLS)/bin/kubectl" in mk
    assert "tomllib" in mk and "versions.toml" in mk
    assert "kind-config.yaml" in mk
    proc = subprocess.run(
        ["make", "-n", "images", "KIND=kind", "DOCKER=docker"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    # The builder reads every pin from versions.toml itself (tests/static/test_images.py checks it).
    assert "logberg images build spark hive-metastore" in proc.stdout
    assert "dev-postgres dev-s3" in proc.stdout


# --------------------------------------------------------------------------------- checkov
def checkov(*args: str) -> None:
    if not CHECKOV.is_file():
        pytest.skip("checkov not installed: run `make checkov`")
    env = dict(
        os.environ,
        PATH=f"{HELM.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        BC_SKIP_MAPPING="TRUE",
        CHECKOV_RUN_SCA_PACKAGE_SCAN_V2="false",
    )
    proc = subprocess.run(
        [str(CHECKOV), "--compact", "--quiet", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_checkov_rendered_manifests(tmp_path: Path) -> None:
    for chart, variant in CASES:
        (tmp_path / f"{chart}-{variant}.yaml").write_text(render(chart, *VARIANTS[chart][variant]))
    checkov("-d", str(tmp_path), "--framework", "kubernetes")


def test_checkov_charts_directory() -> None:
    # Every skip is inline: checkov.io/skipN annotations in the templates (with reasons) and
    # `# checkov:skip=` comments in values files. Only for checkov's own helm rendering,
    # CKV_K8S_21 is skipped: it renders without a namespace (`default`); the rendered
    # manifests above use the real one and pass CKV_K8S_21.
    checkov("-d", str(CHARTS), "--skip-framework", "helm")
    checkov("-d", str(CHARTS), "--framework", "helm", "--skip-check", "CKV_K8S_21")


def test_submit_templates_are_the_charts_own_applications() -> None:
    """`logberg k8s submit` takes its specs from the chart's <release>-apps ConfigMap: each
    equals the SparkApplication the chart renders for that job, so the chart and the CLI
    cannot drift; the generator's runs the generator Job's command."""
    items = variant_docs("logberg", "kind")
    cm = one(items, "ConfigMap", "-apps")
    specs = {k.removesuffix(".yaml"): yaml.safe_load(v) for k, v in cm["data"].items()}
    assert set(specs) == {"ingest", "analytics", "maintenance", "generator", "report"}
    for component in ("ingest", "analytics"):
        app = one(items, "SparkApplication", f"-{component}")
        assert specs[component] == app["spec"], component
    for name, spec in specs.items():
        check_spark_app_spec(spec, f"apps/{name}")
    job = generator_job(items)
    command = pod_spec(job)["containers"][0]
    assert specs["generator"]["arguments"] == [*command["command"][2:], *command["args"]]
    assert specs["maintenance"]["arguments"][0] == "maintain"
    assert specs["report"]["arguments"] == ["report"]


# ------------------------------------------------------------------------- Spark Connect
CONNECT_CRD = "sparkoperator.k8s.io_sparkconnects.yaml"


def _connect_docs(*sets: str) -> list[dict[str, Any]]:
    return docs("logberg", ("values-kind.yaml",), ("connect.enabled=true", *sets))


def test_spark_connect_is_off_by_default() -> None:
    for variant in VARIANTS["logberg"]:
        if variant in ("connect", "history"):  # both turn it on
            continue
        items = variant_docs("logberg", variant)
        assert not by_kind(items, "SparkConnect"), variant
        assert not [d for d in items if d["metadata"]["name"].startswith("logberg-connect")]


def test_spark_connect_has_the_applications_image_conf_and_pods() -> None:
    items = _connect_docs()
    conn = one(items, "SparkConnect")
    assert conn["apiVersion"] == "sparkoperator.k8s.io/v1alpha1"
    assert conn["metadata"]["name"] == "logberg-connect"
    # The operator copies the resource's labels onto the executor pods (over their
    # template's): a component label there would make them `connect-server`.
    assert "app.kubernetes.io/component" not in conn["metadata"]["labels"]
    spec = conn["spec"]
    [(_, app)] = spark_apps(docs("logberg", ("values-kind.yaml",), ("ingest.enabled=true",)))
    assert spec["image"] == app["image"] and spec["sparkVersion"] == app["sparkVersion"]
    # Nothing in sparkConf: the operator writes it unquoted into a `bash -c` line.
    assert "sparkConf" not in spec and "hadoopConf" not in spec
    # The applications' conf, every key and value, in the server's spark-defaults.conf.
    cm = one(items, "ConfigMap", "-connect-defaults")
    defaults = dict(
        line.split(" ", 1) for line in cm["data"]["spark-defaults.conf"].splitlines() if line
    )
    for key, value in app["sparkConf"].items():
        assert defaults.get(key) == value, key
    assert defaults["spark.connect.grpc.binding.port"] == "15002"
    assert defaults["spark.executor.memoryOverhead"] == "512m"
    # values-kind.yaml: small requests, for kind's one node
    assert defaults["spark.kubernetes.executor.request.cores"] == "100m"
    assert not SECRET_PATTERN.search(cm["data"]["spark-defaults.conf"])
    # No token in it (the clients' token is the server's env), but in what Spark redacts.
    from logberg.lakehouse.session import REDACTION

    conf = {k: v for k, v in defaults.items() if k not in REDACTION}
    assert "token" not in str(conf).lower()
    for role, component in (("server", "connect-server"), ("executor", "connect-executor")):
        template = spec[role]["template"]
        pod = template["spec"]
        labels = template["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == "logberg"
        assert labels["app.kubernetes.io/component"] == component
        assert labels["logberg.io/metastore-client"] == "true"
        assert pod["serviceAccountName"] == app["driver"]["serviceAccount"]
        assert pod["securityContext"] == app["driver"]["podSecurityContext"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        [c] = pod["containers"]
        assert c["name"] == f"spark-kubernetes-{'driver' if role == 'server' else 'executor'}"
        assert (
            c["securityContext"]
            == app[("driver" if role == "server" else "executor")]["securityContext"]
        )
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        env = {e["name"]: e for e in c["env"]}
        for e in app["driver"]["env"]:  # the catalog, S3 and its keys (by reference)
            assert env[e["name"]] == e, e["name"]
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert {"/tmp", "/opt/spark/work-dir"} <= mounts
    assert spec["server"]["template"]["spec"]["automountServiceAccountToken"] is True
    assert spec["executor"]["template"]["spec"]["automountServiceAccountToken"] is False
    server = spec["server"]["template"]["spec"]
    assert [i["name"] for i in server["initContainers"]] == ["wait-ready"]
    [c] = server["containers"]
    assert c["resources"]["limits"]["memory"] and c["readinessProbe"]["tcpSocket"]
    assert {m["mountPath"]: m for m in c["volumeMounts"]}["/opt/spark/conf"]["readOnly"]
    assert {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"} in c["env"]


def test_spark_connect_token_comes_from_a_secret() -> None:
    items = _connect_docs()
    conn = one(items, "SparkConnect")
    [c] = conn["spec"]["server"]["template"]["spec"]["containers"]
    [token] = [e for e in c["env"] if e["name"] == "SPARK_CONNECT_AUTHENTICATE_TOKEN"]
    assert token["valueFrom"] == {"secretKeyRef": {"name": "logberg-connect-token", "key": "token"}}
    secret = one(items, "Secret", "-connect-token")
    assert set(secret["data"]) == {"token"}
    import base64

    value = base64.b64decode(secret["data"]["token"]).decode()
    assert re.fullmatch(r"[A-Za-z0-9]{48}", value)
    # Random per render (a fresh install), never from values.
    again = [d for d in yaml.safe_load_all(helm(
        "template", "logberg", str(CHARTS / "logberg"), "-n", NAMESPACE,
        "-f", str(CHARTS / "logberg" / "values-kind.yaml"), "--set", "connect.enabled=true",
        "--show-only", "templates/sparkconnect.yaml",
    ).stdout) if d and d["kind"] == "Secret"]  # fmt: skip
    assert again[0]["data"]["token"] != secret["data"]["token"]
    # The token stays out of the Spark conf (event logs, the UI).
    for d in items:
        assert value not in json.dumps(d) or d["kind"] == "Secret"
    # An existing Secret: none rendered, the server reads that one's key.
    mine = _connect_docs("connect.auth.existingSecret=my-token", "connect.auth.tokenKey=t")
    assert not by_kind(mine, "Secret")
    [c] = one(mine, "SparkConnect")["spec"]["server"]["template"]["spec"]["containers"]
    [token] = [e for e in c["env"] if e["name"] == "SPARK_CONNECT_AUTHENTICATE_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"] == {"name": "my-token", "key": "t"}
    # The generated Secret is looked up, so an upgrade keeps the token.
    template = (CHARTS / "logberg" / "templates" / "sparkconnect.yaml").read_text()
    assert 'lookup "v1" "Secret" .Release.Namespace $secret' in template


def test_spark_connect_network_policy_admits_only_labelled_clients() -> None:
    items = _connect_docs()
    policies = {d["metadata"]["name"]: d["spec"] for d in by_kind(items, "NetworkPolicy")}
    release, server = policies["logberg"], policies["logberg-connect"]
    # The release-wide policy (any release pod to any port) leaves the server out ...
    assert release["podSelector"]["matchExpressions"] == [
        {"key": "app.kubernetes.io/component", "operator": "NotIn", "values": ["connect-server"]}
    ]
    # ... which has its own: gRPC only from the release's pods with the client labels.
    assert server["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "logberg",
        "app.kubernetes.io/instance": "logberg",
        "app.kubernetes.io/component": "connect-server",
    }
    assert server["policyTypes"] == ["Ingress"]
    by_port = {p["port"]: rule.get("from") for rule in server["ingress"] for p in rule["ports"]}
    assert by_port[15002] == [
        {
            "podSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "logberg",
                    "app.kubernetes.io/instance": "logberg",
                    "logberg.io/connect-client": "true",
                }
            }
        }
    ]
    executors = {"app.kubernetes.io/component": "connect-executor"}
    for port in (7078, 7079):  # the driver's RPC and block manager: its executors only
        [peer] = by_port[port]
        assert executors.items() <= peer["podSelector"]["matchLabels"].items()
    assert set(by_port) == {15002, 7078, 7079, 4040}
    # Without the server, the release's policy is as before.
    plain = {
        d["metadata"]["name"]: d for d in by_kind(variant_docs("logberg", "kind"), "NetworkPolicy")
    }
    assert list(plain) == [
        "logberg", "logberg-egress", "logberg-executor-egress", "logberg-kafka-egress"
    ]  # fmt: skip
    assert "matchExpressions" not in plain["logberg"]["spec"]["podSelector"]


def test_spark_connect_matches_the_operators_crd() -> None:
    """The rendered SparkConnect against the CRD of the pinned operator chart, when the
    chart is cached (make tools); the keys its types declare, nothing else."""
    import jsonschema

    chart_version = PINS["kubernetes"]["spark_operator_chart"]
    found = sorted(REPO.glob(f".tools/charts/spark-operator-{chart_version}/crds/{CONNECT_CRD}"))
    if not found:
        pytest.skip(
            f"the spark-operator chart {chart_version} is not in .tools/charts (make tools)"
        )
    crd = yaml.safe_load(found[0].read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])

    def closed(node: Any) -> None:  # unknown keys are errors, as a structural schema prunes them
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node.setdefault("additionalProperties", False)
            for v in node.values():
                closed(v)
        elif isinstance(node, list):
            for v in node:
                closed(v)

    closed(schema)
    schema["properties"]["metadata"] = {"type": "object"}
    jsonschema.validate(one(_connect_docs(), "SparkConnect"), schema)


def test_the_image_provides_what_the_operator_runs() -> None:
    """The operator runs `${SPARK_HOME}/sbin/start-connect-server.sh ARGS` (bash -c) and
    stop-connect-server.sh as preStop: the image's own scripts, copied into SPARK_HOME."""
    sbin = REPO / "images" / "spark" / "sbin"
    for name in ("start-connect-server.sh", "stop-connect-server.sh"):
        script = sbin / name
        assert os.access(script, os.X_OK), script
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
        assert "set -x" not in script.read_text()
    start = (sbin / "start-connect-server.sh").read_text()
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in start
    assert '"$@"' in start and "SPARK_NO_DAEMONIZE" in start
    dockerfile = (REPO / "images" / "spark" / "Dockerfile").read_text()
    assert "COPY --chmod=0755 images/spark/sbin/ /opt/spark/sbin/" in dockerfile
    assert "SPARK_HOME=/opt/spark" in dockerfile


def test_monitoring_variant_pushes_and_scrapes_the_drivers() -> None:
    """The drivers and the toolbox take the Pushgateway and the release (the metrics'
    instance) from one ConfigMap, whole; the PodMonitor selects exactly this release's
    drivers (Spark labels them spark-role=driver) on the UI port Spark names `spark-ui`."""
    items = variant_docs("logberg", "monitoring")
    app = one(items, "SparkApplication", "-ingest")
    settings = one(items, "ConfigMap", "-monitoring")
    assert settings["data"] == {
        "LOGBERG_PUSHGATEWAY": "http://pushgateway.monitoring:9091",
        "LOGBERG_METRICS_INSTANCE": "logberg",
    }
    ref = {"configMapRef": {"name": settings["metadata"]["name"], "optional": True}}
    toolbox = one(items, "Deployment", "-toolbox")["spec"]["template"]["spec"]["containers"][0]
    for env_from in (app["spec"]["driver"]["envFrom"], toolbox["envFrom"]):
        assert env_from == [ref], env_from
    env = {e["name"] for e in app["spec"]["driver"]["env"]}
    assert not env & set(settings["data"]), "set twice: env would win over the ConfigMap"
    monitor = one(items, "PodMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    driver_labels = {**app["spec"]["driver"]["labels"], "spark-role": "driver"}
    assert selector.items() <= driver_labels.items() and selector["spark-role"] == "driver"
    assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} == {"spark-ui"}
    rule = one(items, "PrometheusRule")
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts == {
        "LogbergIngestLag",
        "LogbergRejectShare",
        "LogbergSparkApplicationFailed",
        "LogbergAnalyticsStale",
        "LogbergKafkaLagGrowing",
    }
    default = variant_docs("logberg", "default")
    assert not by_kind(default, "PodMonitor") and not by_kind(default, "PrometheusRule")


def test_history_variant_logs_every_spark_process_and_serves_the_prefix() -> None:
    """Every Spark process of the release (drivers, executors, the Connect server, the
    toolbox's spark-sql) writes zstd, rolled event logs to one prefix; the init containers
    that run before them write its marker; the History Server reads that prefix only, with
    its own ServiceAccount, probes on its REST API, and no credential in its conf."""
    items = variant_docs("logberg", "history")
    prefix = "s3a://logberg/spark-events"
    want = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": prefix,
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
        "spark.eventLog.rolling.enabled": "true",
        "spark.eventLog.rolling.maxFileSize": "64m",
    }
    app = one(items, "SparkApplication", "-ingest")
    assert want.items() <= app["spec"]["sparkConf"].items()
    for cm_suffix, key in (
        ("-connect-defaults", "spark-defaults.conf"),
        ("-toolbox", "spark-defaults.conf"),
    ):
        lines = one(items, "ConfigMap", cm_suffix)["data"][key].splitlines()
        conf = dict(ln.strip().split(" ", 1) for ln in lines if ln.strip())
        assert want.items() <= conf.items(), cm_suffix
    creators = [
        pod_spec(one(items, "Deployment", "-toolbox"))["initContainers"][0],
        app["spec"]["driver"]["initContainers"][0],
    ]
    for init in creators:
        assert init["command"][-3:] == ["--event-log-dir", prefix, "--create-event-log-dir"]
    dep = one(items, "Deployment", "-history")
    spec = pod_spec(dep)
    [wait] = spec["initContainers"]
    assert wait["command"][:3] == ["logberg", "wait-ready", "--event-log-only"]
    assert "--create-event-log-dir" not in wait["command"] and prefix in wait["command"]
    [server] = spec["containers"]
    assert (
        server["command"][0] == "java"
        and "org.apache.spark.deploy.history.HistoryServer" in server["command"]
    )
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"] == {"path": "/api/v1/version", "port": "http"}
    sa = one(items, "ServiceAccount", "-history")
    assert spec["serviceAccountName"] == sa["metadata"]["name"] == "logberg-history"
    assert sa["automountServiceAccountToken"] is False
    conf_text = one(items, "ConfigMap", "-history")["data"]["history-server.conf"]
    conf = dict(ln.split(" ", 1) for ln in conf_text.splitlines() if ln)
    assert conf["spark.history.fs.logDirectory"] == prefix
    assert conf["spark.history.fs.cleaner.maxAge"] == "7d"
    assert conf["spark.hadoop.fs.s3a.endpoint"].startswith("http://")
    assert not [k for k in conf if re.search(r"(?i)secret|access.?key|password|token", k)]
    svc = one(items, "Service", "-history")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["ports"][0]["port"] == 18080
    # Off by default; on without event logs, or with no S3 default, it refuses to render.
    assert not [
        d for d in variant_docs("logberg", "default") if d["metadata"]["name"].endswith("-history")
    ]
    proc = helm(
        "template", "x", str(CHARTS / "logberg"), "--set", "historyServer.enabled=true", check=False
    )
    assert proc.returncode != 0 and "historyServer.enabled needs eventLog.enabled" in proc.stderr
    proc = helm(
        "template",
        "x",
        str(CHARTS / "logberg"),
        "--set",
        "eventLog.enabled=true",
        "--set",
        "warehouse.uri=file:///w",
        check=False,
    )
    assert proc.returncode != 0 and "eventLog.dir: set it" in proc.stderr
    custom = docs(
        "logberg",
        (),
        ("ingest.schedule=", "eventLog.enabled=true", "eventLog.dir=s3a://logs-b/events/"),
    )
    assert (
        one(custom, "SparkApplication", "-ingest")["spec"]["sparkConf"]["spark.eventLog.dir"]
        == "s3a://logs-b/events"
    )
