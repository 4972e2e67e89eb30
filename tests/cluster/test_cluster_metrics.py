"""logberg's own metrics from a release: a SparkApplication's driver pushes its run's
figures to a Pushgateway (chart value monitoring.pushgatewayUrl sets the same environment)
and a real Prometheus scrapes it; PromQL gives the generator's manifest.

The Pushgateway and Prometheus are Debian's (`make prometheus`), on this machine: the pods
reach it at the node's address, the cluster's bridge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.framework import BUCKET, EXAMPLES, LANDING, Deployed
from tests.helpers.prometheus import running

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

APP = "logberg-ingest-metrics"
# A day no other test writes: `ingest --full` of its folder reads exactly this file, on a
# fresh deployment or a reused one.
DAY = "2024-02-29"
INSTANCE = "cluster-test"


def node_ip(d: Deployed) -> str:
    return d.kubectl(
        "get",
        "nodes",
        "-o",
        "jsonpath={.items[0].status.addresses[?(@.type=='InternalIP')].address}",
    ).strip()


def test_an_ingest_in_the_cluster_pushes_what_it_read(deployed: Deployed, tmp_path: Path) -> None:
    import yaml

    m = deployed.generate(
        "--num-files", "1", "--lines-per-file", "3000", "--start-date", DAY, "--end-date", DAY,
        "--seed", "105", "--malformed-rate", "0.01",
    )  # fmt: skip
    totals = m["totals"]
    assert totals["malformed_total"] > 0
    with running(tmp_path, gateway_host=node_ip(deployed)) as prom:
        doc = yaml.safe_load((EXAMPLES / "ingest.yaml").read_text())
        doc["metadata"]["name"] = APP
        doc["spec"]["arguments"] = [
            "ingest", "--input", f"s3a://{BUCKET}/{LANDING}/raw/nginx/dt={DAY}", "--full",
        ]  # fmt: skip
        doc["spec"]["driver"]["env"] += [
            {"name": "LOGBERG_PUSHGATEWAY", "value": prom.gateway},
            {"name": "LOGBERG_METRICS_INSTANCE", "value": INSTANCE},
        ]
        deployed.delete_app(APP)
        deployed.k("apply", "-f", "-", stdin=json.dumps(doc))
        try:
            deployed.wait_app(APP)
            sel = f'job="logberg_ingest",instance="{INSTANCE}"'
            assert prom.value(f'logberg_ingest_lines{{{sel},result="accepted"}}') == totals["valid"]
            assert (
                prom.value(f'logberg_ingest_lines{{{sel},result="rejected"}}')
                == totals["malformed_total"]
            )
            assert (
                prom.value(f"sum(logberg_ingest_rejected_lines{{{sel}}})")
                == totals["malformed_total"]
            )
            assert prom.value(f"logberg_ingest_files{{{sel}}}") == 1
            assert prom.value(f"logberg_ingest_duration_seconds{{{sel}}}") > 0
        finally:
            deployed.delete_app(APP)
