"""The demo as the README runs it (`make kind-up`, then `make k8s-demo`), its tables
against the generator's manifest and against what the embedded default makes of the same
files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from logberg.lakehouse import schema
from tests.e2e.framework import (
    BUCKET,
    LANDING,
    Deployed,
    assert_exact,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_deploy_and_demo_ran_as_the_readme_says(deployed: Deployed) -> None:
    deploy = deployed.outputs["kind-up"]  # the cluster, then k8s-deploy
    for step in ("== images into the node", "spark-operator 2.5.2 (CRDs first)", "helm test"):
        assert step in deploy, deploy[-3000:]
    assert "--server-side" in deploy  # the CRDs are applied, not left to Helm
    assert "webhooks hold their CA bundle" in deploy
    demo = deployed.outputs["k8s-demo"]
    assert "kubectl apply -f charts/logberg/examples/ingest.yaml" in demo
    for app in ("logberg-ingest-example", "logberg-analytics-example"):
        assert f"SparkApplication {app}: COMPLETED" in demo, demo[-3000:]
    # The top tables, printed by spark-sql in the cluster (with their headers).
    for header in ("section\tdate\trank\tip_address", "section\tdate\trank\tdevice_type"):
        assert header in demo, demo[-3000:]
    assert len([ln for ln in demo.splitlines() if ln.startswith("top_ips\t")]) == 10
    assert re.search(r"^weekly\t2025\t2\t2025-01-06\t", demo, re.M), demo[-2000:]


def test_tables_equal_the_manifest(deployed: Deployed) -> None:
    m = deployed.demo_manifest()  # the demo's generator Job
    assert m["totals"]["malformed_total"] > 0
    assert_exact(deployed)
    rows = deployed.sql(
        "SELECT 'ip', CAST(date AS STRING), ip_address, request_count, rank "
        "FROM nginx_logs.daily_top_ips "
        "UNION ALL SELECT 'device', CAST(date AS STRING), device_type, request_count, 0 "
        "FROM nginx_logs.daily_top_devices"
    )
    for day, expected in m["days"].items():
        ips = sorted((r for r in rows if r[0] == "ip" and r[1] == day), key=lambda r: int(r[4]))
        assert [[r[2], int(r[3])] for r in ips] == expected["top_ips"][:10], day
        devices = {r[2]: int(r[3]) for r in rows if r[0] == "device" and r[1] == day}
        assert devices == {k: v for k, v in expected["device_types"].items() if v}, day


def fingerprint_sql(m: dict[str, Any]) -> str:
    """Every row of the data and gold tables of the manifest's files, days and weeks, as one
    string, without what depends on where or when it ran (event ids hash the file's URI;
    processing times; run ids). Other files' runs add other days and weeks beside them."""

    def rel(col: str) -> str:
        return f"regexp_extract({col}, 'raw/nginx/.*$', 0)"

    files = ", ".join(f"'{f['path']}'" for f in m["files"])
    first, last = min(m["days"]), max(m["days"])
    only = {
        "source_file": f"{rel('source_file')} IN ({files})",
        "date": f"date BETWEEN DATE'{first}' AND DATE'{last}'",
        "week_start_date": f"week_start_date BETWEEN date_sub(DATE'{first}', 6) AND DATE'{last}'",
    }
    parts = []
    for table, skip in (
        (schema.ACCESS_LOGS, {"event_id", "processed_timestamp"}),
        (schema.REJECTS, {"run_id", "rejected_at"}),
        (schema.DAILY_TOP_IPS, {"processed_timestamp"}),
        (schema.WEEKLY_TOP_IPS, {"processed_timestamp"}),
        (schema.DAILY_TOP_DEVICES, {"processed_timestamp"}),
        (schema.WEEKLY_TOP_DEVICES, {"processed_timestamp"}),
        (schema.WEEKLY_ANALYTICS, {"processed_timestamp"}),
    ):
        cols = [
            rel(c) if c == "source_file" else f"CAST({c} AS STRING)"
            for c in table.names
            if c not in skip
        ]
        [where] = [w for c, w in only.items() if c in table.names][:1]
        parts.append(
            f"SELECT '{table.name}' AS t, concat_ws('|', {', '.join(cols)}) AS r FROM {table} "
            f"WHERE {where}"
        )
    return " UNION ALL ".join(parts)


def test_tables_equal_what_the_embedded_default_makes_of_the_same_files(
    deployed: Deployed, fresh_namespace: Any, spark: Any, tmp_path: Path
) -> None:
    from logberg.pipeline.analytics import AnalyticsConfig, analytics
    from logberg.pipeline.ingest.batch import ingest
    from logberg.pipeline.ingest.config import IngestConfig

    m = deployed.demo_manifest()
    client = deployed.s3()
    landing = tmp_path / "landing"
    for f in m["files"]:
        key = f"{LANDING}/{f['path']}"
        dest = landing / f["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(BUCKET, key, str(dest))
    ingest(spark, IngestConfig(inputs=(landing.as_uri(),)))
    analytics(spark, AnalyticsConfig())

    query = fingerprint_sql(m)
    local = sorted((r["t"], r["r"]) for r in spark.sql(query).collect())
    in_cluster = sorted((r[0], r[1]) for r in deployed.sql(query))
    assert len(local) > len(m["files"]) * 2000
    for table in sorted({t for t, _ in local}):
        a = [r for t, r in local if t == table]
        b = [r for t, r in in_cluster if t == table]
        assert a == b, f"{table}: {len(a)} rows here, {len(b)} in the cluster"
