"""Write charts/logberg/examples/*.yaml from the chart (`make k8s-examples`).

Each example is the SparkApplication the chart renders with values-kind.yaml, as a plain
manifest a person applies with `kubectl -n <namespace> apply -f`: no namespace of its own,
a fixed `-example` name, the chart's image at the version tag (`make k8s-deploy` loads it
under that tag too). tests/static/test_charts.py checks that they never drift from the chart.

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
HEADERS = {
    "ingest": "Ingest the landing logs into nginx_logs.access_logs once (new files only).",
    "analytics": "Build the daily and weekly top tables for the days ingest touched.",
    "maintenance": "Compact, expire snapshots and remove orphan files, once.",
    "streaming": "Continuous ingest (`ingest --follow`): runs until deleted.",
}


def rendered(helm: str) -> list[dict[str, Any]]:
    args = [helm, "template", "logberg", str(CHARTS / "logberg")]
    args += ["-f", str(CHARTS / "logberg" / "values-kind.yaml")]
    for s in SETS:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d and d.get("kind") == "SparkApplication"]


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--helm", default="helm")
    a = ap.parse_args()
    for doc in rendered(a.helm):
        component, manifest = example(doc)
        head = (
            f"# {HEADERS[component]}\n"
            f"# Plain manifest: `kubectl -n <namespace> apply -f "
            f"charts/logberg/examples/{component}.yaml`\n"
            "# after `make k8s-deploy` (the logberg chart with values-kind.yaml makes the\n"
            "# ServiceAccount logberg-spark and its Role; the dev Secret logberg-s3 comes from\n"
            "# the deploy). Generated from the chart by `make k8s-examples`: do not edit.\n"
        )
        text = yaml.safe_dump(manifest, sort_keys=False, width=100)
        (EXAMPLES / f"{component}.yaml").write_text(head + text)
        print(f"wrote {EXAMPLES / f'{component}.yaml'}")


if __name__ == "__main__":
    main()
