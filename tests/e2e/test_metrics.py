"""What the jobs show, through a real Prometheus and `logberg k8s ui`.

The release pushes to a Pushgateway on this machine (chart value monitoring.pushgatewayUrl,
set by the e2e conftest before the deploy; the pods reach it at this machine's address,
through the kind node), and Prometheus (Debian's, `make prometheus`) scrapes it, and the
pods too, at their own addresses (a route to the node's pod network, for the test):
- the demo's ingest and analytics SparkApplications, the plain examples, pushed their
  figures, and PromQL gives the demo generator's manifest;
- the streaming example (`ingest --follow`, which runs until deleted) pushes each
  micro-batch's, and PromQL gives its own generated file's;
- Prometheus scrapes Spark's own metrics from the driver's PrometheusServlet, at the
  address its scrape annotations give, and `logberg k8s ui APP` reaches the live driver;
- the Spark Operator's own metrics, scraped from its controller pod, count the demo's
  applications, and an application that fails makes the chart's
  LogbergSparkApplicationFailed expression return its series.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.framework import BUCKET, EXAMPLES, LANDING, OPERATOR_NS, Deployed, wait_for
from tests.e2e.test_history_server import get, ui
from tests.helpers.prometheus import pod_target, pods_job, prometheus
from tests.helpers.waiting import eventually
from tests.static.test_alert_rules import rules

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

APP = "logberg-streaming-metrics"
FAILING = "logberg-fails-on-purpose"
# A day no other test writes; a checkpoint of this run's own, so that on a reused
# deployment the stream lists the (regenerated) file again and the ledger says it changed.
DAY = "2024-02-29"
INSTANCE = "cluster-test"


def test_a_streaming_ingest_pushes_its_figures_and_serves_its_live_ui(
    deployed: Deployed, tmp_path: Path
) -> None:
    import yaml

    m = deployed.generate(
        "--num-files", "1", "--lines-per-file", "3000", "--start-date", DAY, "--end-date", DAY,
        "--seed", "105", "--malformed-rate", "0.01",
    )  # fmt: skip
    totals = m["totals"]
    assert totals["malformed_total"] > 0
    targets = tmp_path / "pods.json"
    targets.write_text("[]")
    with (
        deployed.pod_routes(),
        prometheus(tmp_path, deployed.gateway, extra_jobs=pods_job(targets)) as prom,
    ):
        # The demo's own runs (make k8s-demo: kubectl apply of the plain examples), which take
        # the release's metrics settings from its ConfigMap: the last ingest run is the
        # demo's, the first of the session (a reused deployment whose later files ran other
        # ingests pushes theirs: run this file on a fresh one).
        settings = deployed.obj("configmap", "logberg-monitoring")["data"]
        assert settings["LOGBERG_PUSHGATEWAY"] == deployed.gateway
        release = f'instance="{settings["LOGBERG_METRICS_INSTANCE"]}"'
        demo = deployed.demo_manifest()["totals"]
        ingested = f'logberg_ingest_lines{{job="logberg_ingest",{release}'
        assert prom.value(f'{ingested},result="accepted"}}') == demo["valid"]
        assert prom.value(f'{ingested},result="rejected"}}') == demo["malformed_total"]
        analysed = (
            f'logberg_analytics_last_success_timestamp_seconds{{job="logberg_analytics",{release}}}'
        )
        assert 0 < prom.value(analysed) <= time.time()

        doc = yaml.safe_load((EXAMPLES / "streaming.yaml").read_text())
        doc["metadata"]["name"] = APP
        doc["spec"]["arguments"] = [
            "ingest", "--follow", "--input", f"s3a://{BUCKET}/{LANDING}/raw/nginx/dt={DAY}",
            "--checkpoint", f"s3a://{BUCKET}/_checkpoints/metrics-test-{uuid.uuid4().hex[:8]}",
            "--trigger-seconds", "2", "--analytics-every", "0",
        ]  # fmt: skip
        # The release's Pushgateway (envFrom its ConfigMap), as an instance of its own (env
        # wins over envFrom).
        doc["spec"]["driver"]["env"] += [{"name": "LOGBERG_METRICS_INSTANCE", "value": INSTANCE}]
        deployed.delete_app(APP)
        controller = operator_pod(deployed)
        operator = controller["metadata"]["name"]
        targets.write_text(json.dumps([pod_target(controller)]))
        failed_alert = alert_expr("LogbergSparkApplicationFailed")
        # The operator as scraped: the demo's two applications completed.
        assert prom.value(f'sum(spark_application_success_count{{pod="{operator}"}})') >= 2
        if not prom.query(f'spark_application_failure_count{{pod="{operator}"}}'):
            assert prom.query(failed_alert) == [], "no application has failed yet"
        deployed.k("apply", "-f", "-", stdin=json.dumps(doc))
        deployed.k("apply", "-f", "-", stdin=json.dumps(failing(doc)))
        try:
            driver: dict[str, Any] = {}

            def driver_has_an_address() -> bool:
                nonlocal driver
                got = deployed.k("get", "pod", f"{APP}-driver", "-o", "json", "--ignore-not-found")
                driver = json.loads(got) if got.strip() else {}
                return bool(driver.get("status", {}).get("podIP"))

            wait_for("the driver pod's address", driver_has_an_address, timeout=300)
            targets.write_text(json.dumps([pod_target(controller), pod_target(driver)]))

            # logberg's own, pushed after the micro-batch that read the day's file.
            sel = f'job="logberg_ingest",instance="{INSTANCE}"'
            accepted = f'logberg_ingest_lines{{{sel},result="accepted"}}'
            assert prom.value(accepted, timeout=600) == totals["valid"]
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
            # Its input, listed again as the batch ended, holds nothing it did not take.
            assert prom.value(f"logberg_ingest_pending_files{{{sel}}}") == 0

            # Spark's own, from the running driver's PrometheusServlet: the jobs it ran.
            scraped = f'job="pods",pod="{APP}-driver"'
            jobs = f'{{{scraped},__name__=~"metrics_.+_driver_DAGScheduler_job_allJobs_Value"}}'
            assert prom.value(f"max({jobs})") > 0

            # The live driver's own UI, not the History Server's pages.
            app_id = deployed.app_status(APP).get("sparkApplicationId")
            with ui(deployed, APP) as (url, _):
                assert url.endswith("/jobs/") and "/history/" not in url, url
                base = url.removesuffix("/jobs/")
                [live] = get(f"{base}/api/v1/applications")
                assert live["id"] == app_id and not live["attempts"][0]["completed"], live
                assert get(f"{base}/api/v1/applications/{app_id}/jobs"), "no job listed"

            # The application that failed, as the operator counts it and the alert sees it.
            wait_for(f"{FAILING} to fail", lambda: app_state(deployed, FAILING) == "FAILED")
            [fired] = eventually(
                "the failed-application alert's series", lambda: prom.query(failed_alert)
            )
            assert fired["metric"] == {"namespace": OPERATOR_NS}, fired
        finally:
            deployed.delete_app(APP)
            deployed.delete_app(FAILING)


def operator_pod(d: Deployed) -> dict[str, Any]:
    """The operator's running controller pod (its chart annotates it for a scrape)."""
    selector = ["-l", "app.kubernetes.io/component=controller"]
    listed = d.kubectl("-n", OPERATOR_NS, "get", "pods", *selector, "-o", "json")
    [pod] = [p for p in json.loads(listed)["items"] if p["status"].get("phase") == "Running"]
    return dict(pod)


def alert_expr(name: str) -> str:
    """The expression of alert `name` as the chart renders its PrometheusRule."""
    [expr] = [r["expr"] for g in rules()["groups"] for r in g["rules"] if r["alert"] == name]
    return str(expr)


def failing(doc: dict[str, Any]) -> dict[str, Any]:
    """The same application with a command logberg does not have: its driver exits non-zero,
    and with restartPolicy Never the operator marks it FAILED at once."""
    bad = json.loads(json.dumps(doc))
    bad["metadata"]["name"] = FAILING
    bad["spec"]["arguments"] = ["no-such-command"]
    bad["spec"]["restartPolicy"] = {"type": "Never"}
    return bad


def app_state(d: Deployed, name: str) -> str:
    return str((d.app_status(name).get("applicationState") or {}).get("state", ""))
