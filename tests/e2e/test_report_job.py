"""`logberg k8s submit report`: the chart's report application in the cluster."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.framework import (
    BUCKET,
    Deployed,
    logberg_k8s,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_the_report_job_writes_its_page_next_to_the_tables(deployed: Deployed) -> None:
    """`logberg k8s submit report`: the chart's report application, run once, writes one
    self-contained page into the warehouse bucket, drawn from the gold tables."""
    r = logberg_k8s(deployed, "submit", "report", "--wait")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [name] = re.findall(r"SparkApplication (logberg-report-\S+) created", r.stdout)
    try:
        key = "warehouse/reports/logberg-report.html"
        page = deployed.s3().get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
    finally:
        deployed.delete_app(name)
    assert not re.search(r"https?://", page), "an http(s) reference in the report"
    found = re.search(r'<script type="application/json" id="logberg-data">(.*?)</script>', page)
    assert found, page[:2000]
    data = json.loads(found.group(1))
    rows = deployed.sql(
        "SELECT CAST(date AS STRING), ip_address, request_count FROM nginx_logs.daily_top_ips "
        f"WHERE date BETWEEN DATE'{data['since']}' AND DATE'{data['until']}'"
    )
    shown = [
        (d, x["ip_address"], x["request_count"]) for d, xs in data["daily_ips"].items() for x in xs
    ]
    assert rows and sorted(shown) == sorted((d, ip, int(n)) for d, ip, n in rows)
