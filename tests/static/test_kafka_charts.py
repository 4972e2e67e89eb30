"""Static checks of Kafka in the charts: the dev broker of logberg-dev (a hardened
StatefulSet, ready by a Kafka call, its policy and topic Job), and in the logberg chart the
stream from a topic, the generator producing to it, the Kafka clients' egress and the
Kafka examples. The policies are proven by connecting, from inside pods, in
tests/e2e/test_network_policies.py; the stream itself in tests/e2e/test_kafka_stream.py.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
import yaml

from tests.static.test_charts import CHARTS, docs, generator_job, helm, one, pod_spec

pytestmark = pytest.mark.static

KIND = ("values-kind.yaml",)
KAFKA_SETS = ("streaming.enabled=true", "streaming.source=kafka", "generator.output=kafka")
CLIENT = {"logberg.io/kafka-client": "true"}


def broker() -> dict[str, Any]:
    return one(docs("logberg-dev"), "StatefulSet", "-kafka")


def test_the_dev_broker_is_a_hardened_statefulset_ready_by_a_kafka_call() -> None:
    sts = broker()
    spec = sts["spec"]
    assert spec["replicas"] == 1 and spec["serviceName"] == "logberg-dev-kafka"
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 1000  # the image's own user
    assert pod["automountServiceAccountToken"] is False
    [c] = pod["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert c["readinessProbe"]["exec"]["command"] == ["kafka-api-versions", "127.0.0.1:9092", "3"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    # Clients are sent back to the Service's name: the one broker, wherever its pod runs.
    assert env["KAFKA_ADVERTISED_HOST"] == "logberg-dev-kafka.logberg.svc"
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts == {"/var/lib/kafka": "data", "/tmp": "tmp"}
    # kind: a PersistentVolumeClaim per broker; without persistence, an emptyDir.
    [claim] = spec["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data" and claim["spec"]["resources"]["requests"]
    ephemeral = one(
        docs("logberg-dev", (), ("kafka.persistence.enabled=false",)), "StatefulSet", "-kafka"
    )["spec"]
    assert "volumeClaimTemplates" not in ephemeral
    volumes = ephemeral["template"]["spec"]["volumes"]
    assert {"name": "data", "emptyDir": {"sizeLimit": "5Gi"}} in volumes
    svc = one(docs("logberg-dev"), "Service", "-kafka")
    assert svc["spec"]["ports"] == [{"name": "kafka", "port": 9092, "targetPort": "kafka"}]
    assert not [d for d in docs("logberg-dev", (), ("kafka.enabled=false",)) if "kafka" in str(d)]


def test_the_broker_admits_only_kafka_clients_and_reaches_only_dns() -> None:
    items = docs("logberg-dev")
    policy = one(items, "NetworkPolicy", "-kafka")["spec"]
    assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "kafka"
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    [rule] = policy["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": CLIENT}}]
    assert rule["ports"] == [{"port": 9092, "protocol": "TCP"}]
    [out] = policy["egress"]
    assert {p["port"] for p in out["ports"]} == {53}
    assert out["to"][0]["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}


def test_the_topic_job_creates_the_chart_topics_as_a_kafka_client() -> None:
    job = one(docs("logberg-dev"), "Job", "-kafka-topics")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["logberg.io/kafka-client"] == "true"
    [c] = pod_spec(job)["containers"]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["BOOTSTRAP"] == "logberg-dev-kafka.logberg.svc:9092"
    assert json.loads(env["TOPICS"]) == [{"name": "access-logs", "partitions": 4}]
    bad = helm(
        "template", "x", str(CHARTS / "logberg-dev"), "--set", "kafka.topics[0].name=a b",
        "--set", "kafka.topics[0].partitions=1", check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and "/kafka/topics/0/name" in bad.stderr, bad.stderr


def test_the_stream_reads_the_topic_restarts_always_and_its_pods_are_kafka_clients() -> None:
    items = docs("logberg", KIND, KAFKA_SETS)
    app = one(items, "SparkApplication", "-streaming")["spec"]
    assert app["arguments"] == ["ingest", "--from", "kafka:///access-logs"]
    assert app["restartPolicy"]["type"] == "Always"
    for role in ("driver", "executor"):
        assert app[role]["labels"]["logberg.io/kafka-client"] == "true", role
        env = {e["name"]: e.get("value") for e in app[role]["env"]}
        assert env["LOGBERG_KAFKA_BOOTSTRAP"] == "logberg-dev-kafka:9092", role
    # Its driver starts once the brokers answer it (a new pod's policy may lag behind it).
    [wait] = app["driver"]["initContainers"]
    assert wait["command"][:2] == ["logberg", "wait-ready"] and "--kafka" in wait["command"]
    cp = one(
        docs("logberg", KIND, (*KAFKA_SETS, "streaming.checkpoint=s3a://logberg/checkpoints/a")),
        "SparkApplication",
        "-streaming",
    )
    assert cp["spec"]["arguments"][-2:] == ["--checkpoint", "s3a://logberg/checkpoints/a"]
    # A stream of files is no Kafka client.
    plain = docs("logberg", KIND, ("streaming.enabled=true",))
    files = one(plain, "SparkApplication", "-streaming")
    assert files["spec"]["arguments"][:2] == ["ingest", "--follow"]
    assert "logberg.io/kafka-client" not in files["spec"]["executor"]["labels"]
    assert "--kafka" not in files["spec"]["driver"]["initContainers"][0]["command"]


@pytest.mark.parametrize(
    ("sets", "named"),
    [
        (("streaming.enabled=true", "streaming.source=kafka"), "kafka.bootstrap"),
        (("generator.enabled=true", "generator.output=kafka"), "kafka.bootstrap"),
        ((*KAFKA_SETS, "kafka.bootstrap=b:9092", "logs.format=main"), "logs.format"),
        (("streaming.checkpoint=/tmp/cp",), "/streaming/checkpoint"),
        (("kafka.bootstrap=user:secret@b:9092",), "/kafka/bootstrap"),
        (("streaming.lagSchedule=*/5 * * * *",), "streaming.lagSchedule"),
    ],
)
def test_wrong_kafka_settings_fail_to_render_and_name_the_setting(
    sets: tuple[str, ...], named: str
) -> None:
    args = [a for s in sets for a in ("--set", s)]
    proc = helm("template", "x", str(CHARTS / "logberg"), *args, check=False)
    assert proc.returncode != 0 and named in proc.stderr, proc.stderr


def test_the_generator_produces_to_the_topic_with_its_manifest_on_s3() -> None:
    items = docs("logberg", KIND, KAFKA_SETS)
    job = generator_job(items)
    [c] = pod_spec(job)["containers"]
    assert c["command"][3:9] == [
        "--output", "kafka:///access-logs",
        "--manifest-to", "s3://logberg/kafka-manifests/access-logs",
        "--endpoint-url", "http://logberg-dev-s3:7070",
    ]  # fmt: skip
    assert job["spec"]["template"]["metadata"]["labels"]["logberg.io/kafka-client"] == "true"
    [wait] = pod_spec(job)["initContainers"]
    assert "--no-metastore" in wait["command"] and "--kafka" in wait["command"]
    # Another output is another Job (its name hashes what it runs).
    files = generator_job(docs("logberg", KIND))
    assert files["metadata"]["name"] != job["metadata"]["name"]
    assert "logberg.io/kafka-client" not in files["spec"]["template"]["metadata"]["labels"]


def test_the_release_kafka_clients_may_reach_the_broker_and_no_other_pod_gains_egress() -> None:
    items = docs("logberg", KIND, KAFKA_SETS)
    policy = one(items, "NetworkPolicy", "-kafka-egress")["spec"]
    assert policy["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "logberg",
        "app.kubernetes.io/instance": "logberg",
        **CLIENT,
    }
    assert policy["policyTypes"] == ["Egress"]
    [rule] = policy["egress"]
    assert rule["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "kafka"
    assert rule["ports"] == [{"port": "kafka", "protocol": "TCP"}]
    # Without brokers to name (the default values: EKS reaches MSK by its own rules) no policy.
    assert not [d for d in docs("logberg") if d["metadata"]["name"].endswith("-kafka-egress")]


def test_the_kafka_examples_are_what_the_chart_renders() -> None:
    spec = importlib.util.spec_from_file_location("render_examples", CHARTS / "render_examples.py")
    assert spec and spec.loader
    render_examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_examples)
    assert render_examples.KAFKA_SETS == KAFKA_SETS
    from tests.static.test_charts import HELM

    expected = render_examples.kafka_examples(str(HELM))
    for name, want in expected.items():
        path = CHARTS / "logberg" / "examples" / f"{name}.yaml"
        text = path.read_text()
        assert "{{" not in text and "namespace" not in yaml.safe_load(text)["metadata"]
        drifted = f"{path.name} drifted from the chart: make k8s-examples"
        assert yaml.safe_load(text) == want, drifted
    job = expected["kafka/generate"]
    assert "app.kubernetes.io/instance" not in job["spec"]["template"]["metadata"]["labels"]
    assert expected["kafka/streaming"]["metadata"]["name"] == "logberg-streaming-kafka-example"


def test_the_lag_probe_is_a_scheduled_dry_run_of_the_stream_even_while_it_is_off() -> None:
    lag = ("streaming.source=kafka", "streaming.lagSchedule=*/5 * * * *")
    items = docs("logberg", KIND, lag)  # streaming.enabled=false: the stream stopped
    assert not [d for d in items if d["kind"] == "SparkApplication"]
    [probe] = [d for d in items if d["kind"] == "ScheduledSparkApplication"]
    assert probe["metadata"]["name"] == "logberg-streaming-lag"
    spec = probe["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("*/5 * * * *", "Forbid")
    app = spec["template"]
    assert app["arguments"] == ["ingest", "--from", "kafka:///access-logs", "--dry-run"]
    assert app["restartPolicy"] == {"type": "Never"}
    for role in ("driver", "executor"):
        assert app[role]["labels"]["logberg.io/kafka-client"] == "true", app[role]["labels"]
    env = {e["name"]: e.get("value") for e in app["driver"]["env"]}
    assert env["LOGBERG_KAFKA_BOOTSTRAP"] == "logberg-dev-kafka:9092"
    # Its checkpoint is the stream's (streaming.checkpoint), whose lag it reads.
    at = docs("logberg", KIND, (*lag, "streaming.checkpoint=s3a://warehouse/_checkpoints/x"))
    [probe] = [d for d in at if d["kind"] == "ScheduledSparkApplication"]
    assert probe["spec"]["template"]["arguments"][3:] == [
        "--checkpoint", "s3a://warehouse/_checkpoints/x", "--dry-run",
    ]  # fmt: skip
    # No schedule: no probe (a schedule with a stream of files fails to render, below).
    found = [d for d in docs("logberg", KIND, ("streaming.source=kafka",))]
    assert not [d for d in found if d["metadata"]["name"].endswith("-streaming-lag")]


def test_the_kafka_options_come_from_a_secret_into_every_kafka_client_pod() -> None:
    """kafka.optionsSecret: the Secret's key mounted read-only, LOGBERG_KAFKA_OPTIONS_FILE
    naming it, in every container that talks to Kafka (the stream's and the lag probe's
    driver and executors, the generator, their wait-ready); nowhere else; the Secret's
    contents never rendered (the chart only names it)."""
    secret = ("kafka.optionsSecret.existingSecret=msk-sasl", "kafka.optionsSecret.key=client.json")
    lag = ("streaming.lagSchedule=*/5 * * * *", "generator.enabled=true")
    items = docs("logberg", KIND, (*KAFKA_SETS, *lag, *secret))
    path = "/etc/logberg/kafka/client.json"
    volume = {
        "name": "kafka-options",
        "secret": {
            "secretName": "msk-sasl",
            "items": [{"key": "client.json", "path": "client.json"}],
            "defaultMode": 0o440,
        },
    }
    mount = {"name": "kafka-options", "mountPath": "/etc/logberg/kafka", "readOnly": True}

    def holds_the_file(c: dict[str, Any], where: str) -> None:
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env.get("LOGBERG_KAFKA_OPTIONS_FILE") == path, where
        assert "LOGBERG_KAFKA_OPTIONS" not in env, where
        assert mount in c["volumeMounts"], where

    apps = [d for d in items if d["kind"] in ("SparkApplication", "ScheduledSparkApplication")]
    assert {d["metadata"]["name"] for d in apps} == {"logberg-streaming", "logberg-streaming-lag"}
    for d in apps:
        spec = d["spec"] if d["kind"] == "SparkApplication" else d["spec"]["template"]
        name = d["metadata"]["name"]
        assert volume in spec["volumes"], name
        for role in ("driver", "executor"):
            holds_the_file(spec[role], f"{name} {role}")
        [wait] = spec["driver"]["initContainers"]
        holds_the_file(wait, f"{name} wait-ready")
    job = generator_job(items)
    assert volume in pod_spec(job)["volumes"]
    [generator] = pod_spec(job)["containers"]
    holds_the_file(generator, "generator")
    holds_the_file(pod_spec(job)["initContainers"][0], "generator wait-ready")
    # No other pod mounts it; without a Secret nothing of it renders.
    text = yaml.safe_dump_all(items)
    assert text.count("LOGBERG_KAFKA_OPTIONS_FILE") == 2 * 3 + 2  # 2 apps x 3, the Job's 2
    plain = yaml.safe_dump_all(docs("logberg", KIND, (*KAFKA_SETS, *lag)))
    assert "kafka-options" not in plain and "LOGBERG_KAFKA_OPTIONS_FILE" not in plain
    # A Secret's name or key the schema refuses fails to render, naming the value.
    bad = helm(
        "template", "x", str(CHARTS / "logberg"),
        "--set", "kafka.optionsSecret.existingSecret=Not A Name", check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and "/kafka/optionsSecret/existingSecret" in bad.stderr


def test_no_secret_value_is_rendered_and_spark_redacts_the_kafka_options() -> None:
    """The options file is the only way in for a password: `spark.env` entries with a value
    would show in the manifest (the schema's rule for secrets: valueFrom only), and every
    SparkApplication carries the redaction of lakehouse.session.REDACTION."""
    from logberg.lakehouse.session import REDACTION

    items = docs("logberg", KIND, (*KAFKA_SETS, "kafka.optionsSecret.existingSecret=sasl"))
    text = yaml.safe_dump_all(items)
    for word in ("sasl.jaas.config", "password=", "PlainLoginModule"):
        assert word not in text, word
    for d in items:
        if d["kind"] == "SparkApplication":
            conf = d["spec"]["sparkConf"]
            assert {k: conf.get(k) for k in REDACTION} == REDACTION, d["metadata"]["name"]
