"""Write charts/logberg/examples/*.yaml and examples/kafka/*.yaml from the chart (`make
k8s-examples`).

Each example is the SparkApplication the chart renders with values-kind.yaml, as a plain
manifest a person applies with `kubectl -n <namespace> apply -f`: no namespace of its own,
a fixed `-example` name, the chart's image at the version tag (`make k8s-deploy` loads it
under that tag too). examples/kafka/ holds the Kafka flow's two: the generator Job producing
to the dev broker's topic and the stream that reads it (`make k8s-demo K8S_DEMO_SOURCE=kafka`),
and the stream's lag on a schedule.
tests/static/test_charts.py and test_kafka_charts.py check that they never drift from the chart.

    python charts/render_examples.py [--helm PATH]
"""

from __future__ import annotations

import argparse
import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml

CHARTS = Path(__file__).resolve().parent
EXAMPLES = CHARTS / "logberg" / "examples"
SETS = (
    "ingest.enabled=true",
    "analytics.enabled=true",
    "maintenance.enabled=true",
    "streaming.enabled=true",
)
# The Kafka flow: the stream from the topic and the generator Job producing to it.
KAFKA_SETS = ("streaming.enabled=true", "streaming.source=kafka", "generator.output=kafka")
# The stream's lag on a schedule (the example's: every 5 minutes).
LAG_SETS = (*KAFKA_SETS, "streaming.lagSchedule=*/5 * * * *")
# checkov skips of the generator Job example, beyond the chart's own (each with its reason).
EXAMPLE_JOB_SKIPS = {
    "checkov.io/skip7": "CKV_K8S_21=a plain manifest without a namespace: `kubectl -n "
    "<namespace> apply -f` puts it in the user's",
    "checkov.io/skip8": "CKV2_K8S_6=the NetworkPolicies it meets are the charts' (the dev "
    "broker and S3 admit it by its client labels), not in this folder",
}
HEADERS = {
    "ingest": "Ingest the landing logs into nginx_logs.access_logs once (new files only).",
    "analytics": "Build the daily and weekly top tables for the days ingest touched.",
    "maintenance": "Compact, expire snapshots and remove orphan files, once.",
    "streaming": "Continuous ingest (`ingest --follow`): runs until deleted.",
    "kafka/streaming": "Continuous ingest of the dev broker's topic (`ingest --from`): runs until "
    "deleted.",
    "kafka/generate": "Generate demo nginx lines to the dev broker's topic, once (a Job).",
    "kafka/lag": "The lakehouse's lag behind the dev broker's topic, every 5 minutes, whether the "
    "stream runs or not\n# (`ingest --from ... --dry-run`, pushed to the Pushgateway: the "
    "LogbergKafkaLagGrowing alert's input).",
}


def rendered(
    helm: str, sets: tuple[str, ...] = SETS, kind: str = "SparkApplication"
) -> list[dict[str, Any]]:
    args = [helm, "template", "logberg", str(CHARTS / "logberg")]
    args += ["-f", str(CHARTS / "logberg" / "values-kind.yaml")]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d and d.get("kind") == kind]


def example(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The example of one rendered application: (component, manifest)."""
    component = doc["metadata"]["labels"]["app.kubernetes.io/component"]
    spec = copy.deepcopy(doc["spec"])
    for role in ("driver", "executor"):
        spec[role]["labels"].pop("app.kubernetes.io/instance")
    return component, {
        "apiVersion": doc["apiVersion"],
        "kind": "SparkApplication",
        "metadata": {
            "name": f"logberg-{component}-example",
            "labels": {
                "app.kubernetes.io/name": "logberg",
                "app.kubernetes.io/part-of": "logberg",
                "app.kubernetes.io/component": component,
            },
        },
        "spec": spec,
    }


def kafka_examples(helm: str) -> dict[str, dict[str, Any]]:
    """The Kafka flow's examples: {"kafka/streaming": the stream, "kafka/generate": the Job,
    "kafka/lag": the scheduled lag probe}."""
    [stream] = [
        d
        for d in rendered(helm, KAFKA_SETS)
        if d["metadata"]["labels"]["app.kubernetes.io/component"] == "streaming"
    ]
    _, app = example(stream)
    app["metadata"]["name"] = "logberg-streaming-kafka-example"
    [job] = rendered(helm, KAFKA_SETS, kind="Job")
    template = copy.deepcopy(job["spec"]["template"])
    template["metadata"]["labels"].pop("app.kubernetes.io/instance")
    spec = {k: v for k, v in job["spec"].items() if k != "template"}
    generate = {
        "apiVersion": job["apiVersion"],
        "kind": "Job",
        "metadata": {
            "name": "logberg-generate-kafka-example",
            "labels": {
                "app.kubernetes.io/name": "logberg",
                "app.kubernetes.io/part-of": "logberg",
                "app.kubernetes.io/component": "generator",
            },
            "annotations": {**job["metadata"].get("annotations", {}), **EXAMPLE_JOB_SKIPS},
        },
        "spec": {**spec, "template": template},
    }
    [scheduled] = rendered(helm, LAG_SETS, kind="ScheduledSparkApplication")
    template = copy.deepcopy(scheduled["spec"]["template"])
    for role in ("driver", "executor"):
        template[role]["labels"].pop("app.kubernetes.io/instance")
    lag = {
        "apiVersion": scheduled["apiVersion"],
        "kind": "ScheduledSparkApplication",
        "metadata": {
            "name": "logberg-streaming-lag-kafka-example",
            "labels": {
                "app.kubernetes.io/name": "logberg",
                "app.kubernetes.io/part-of": "logberg",
                "app.kubernetes.io/component": "streaming-lag",
            },
        },
        "spec": {**scheduled["spec"], "template": template},
    }
    return {"kafka/streaming": app, "kafka/generate": generate, "kafka/lag": lag}


def write(name: str, manifest: dict[str, Any]) -> None:
    head = (
        f"# {HEADERS[name]}\n"
        f"# Plain manifest: `kubectl -n <namespace> apply -f "
        f"charts/logberg/examples/{name}.yaml`\n"
        "# after `make k8s-deploy` (the logberg chart with values-kind.yaml makes the\n"
        "# ServiceAccount logberg-spark and its Role; the dev Secret logberg-s3 comes from\n"
        "# the deploy). Generated from the chart by `make k8s-examples`: do not edit.\n"
    )
    text = yaml.safe_dump(manifest, sort_keys=False, width=100)
    path = EXAMPLES / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(head + text)
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--helm", default="helm")
    a = ap.parse_args()
    for doc in rendered(a.helm):
        write(*example(doc))
    for name, manifest in kafka_examples(a.helm).items():
        write(name, manifest)


if __name__ == "__main__":
    main()
