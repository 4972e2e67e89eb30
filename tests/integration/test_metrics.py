"""logberg's own metrics through a real Pushgateway and a real Prometheus that scrapes it:
after an ingest, PromQL gives the manifest's accepted and rejected lines; after analytics,
the rows each gold table holds; a LOGBERG_PUSHGATEWAY that is not a URL fails before Spark
starts."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from logberg.pipeline import metrics
from logberg.pipeline.ingest.batch import ingest
from logberg.pipeline.ingest.config import IngestConfig
from logberg_platform.local_settings import LocalSettings
from tests.conftest import run_logberg
from tests.helpers.prometheus import Prometheus, running
from tests.integration.modes import IN_PROCESS
from tests.integration.test_ingest import generate

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    with running(tmp_path_factory.mktemp("prometheus")) as p:
        yield p


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("metrics-landing")
    return out, generate(out, 83)


def test_ingest_and_analytics_push_what_they_did(
    fresh_namespace: LocalSettings,
    spark: SparkSession,
    prom: Prometheus,
    landed: tuple[Path, dict[str, Any]],
) -> None:
    out, manifest = landed
    started = time.time()
    env = {**IN_PROCESS, metrics.GATEWAY_ENV: prom.gateway}
    r = run_logberg(["ingest", "--input", out.as_uri()], env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"metrics: pushed logberg_ingest to {prom.gateway}" in r.stderr

    totals = manifest["totals"]
    job = '{job="logberg_ingest"}'
    assert (
        prom.value('logberg_ingest_lines{job="logberg_ingest",result="accepted"}')
        == (totals["valid"])
    )
    assert (
        prom.value('logberg_ingest_lines{job="logberg_ingest",result="rejected"}')
        == (totals["malformed_total"])
    )
    # By reason: the rejects table's reasons for the run, summed to the manifest's total.
    by_reason = {
        row["metric"]["reason"]: float(row["value"][1])
        for row in prom.query(f"logberg_ingest_rejected_lines{job}")
    }
    table = {
        r.reason: float(r.n)
        for r in spark.sql(
            "SELECT reason, count(*) AS n FROM nginx_logs.access_logs_rejects GROUP BY reason"
        ).collect()
    }
    assert by_reason == table and sum(table.values()) == totals["malformed_total"]
    assert prom.value(f"logberg_ingest_files{job}") == len(manifest["files"])
    assert prom.value(f"logberg_ingest_last_success_timestamp_seconds{job}") >= started
    newest = max(f.stat().st_mtime for f in out.rglob("dt=*/access-*"))
    assert prom.value(f"logberg_ingest_newest_file_timestamp_seconds{job}") == pytest.approx(
        newest, abs=1.0
    )  # the ledger keeps the files' times to the millisecond
    # Nothing waits: every file under the input was taken.
    assert prom.value(f"logberg_ingest_pending_files{job}") == 0
    assert not prom.query(f"logberg_ingest_pending_oldest_file_timestamp_seconds{job}")

    r = run_logberg(["analytics"], env)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("daily_top_ips", "weekly_top_devices", "weekly_top_ips"):
        held = spark.sql(f"SELECT count(*) FROM nginx_logs.{name}").collect()[0][0]
        assert held > 0
        assert prom.value(f'logberg_analytics_table_rows{{table="{name}"}}') == held
        assert prom.value(f'logberg_analytics_rows_written{{table="{name}"}}') == held
    days = int(re.search(r"analytics: days=(\d+)", r.stdout).group(1))  # type: ignore[union-attr]
    assert days > 0
    assert prom.value('logberg_analytics_dates{job="logberg_analytics"}') == days
    since = prom.value("time() - logberg_analytics_last_success_timestamp_seconds")
    assert since >= 0


LINE = '203.0.113.{n} - - [01/Mar/2025:10:00:0{n} +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"\n'


def land(path: Path, lines: int, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.writelines(LINE.format(n=n) for n in range(lines))
    os.utime(path, (mtime, mtime))


def test_the_lag_is_the_age_of_what_waits(
    fresh_namespace: LocalSettings, spark: SparkSession, prom: Prometheus, tmp_path: Path
) -> None:
    """A run pushes what waits under its inputs as it ends: a file that landed after its
    listing and an ingested file that changed since; the next run takes both."""
    day = tmp_path / "raw" / "dt=2025-03-01"
    hour_ago = float(int(time.time()) - 3600)
    land(day / "access-1.log", 3, hour_ago - 600)
    cfg = IngestConfig(inputs=(tmp_path.as_uri(),))
    result = ingest(spark, cfg)
    assert result.total.accepted == 3

    land(day / "access-2.log", 2, hour_ago)  # landed after the run listed its inputs
    land(day / "access-1.log", 1, hour_ago - 300)  # grew since it was ingested
    metrics.push_ingest(prom.gateway, spark, result, cfg)
    job = '{job="logberg_ingest"}'
    assert prom.value(f"logberg_ingest_pending_files{job} == 2") == 2
    oldest = prom.value(f"logberg_ingest_pending_oldest_file_timestamp_seconds{job}")
    assert oldest == pytest.approx(hour_ago - 300, abs=1.0)
    newest = prom.value(f"logberg_ingest_pending_newest_file_timestamp_seconds{job}")
    assert newest == pytest.approx(hour_ago, abs=1.0)
    assert prom.value(f"time() - logberg_ingest_pending_oldest_file_timestamp_seconds{job}") > 3000

    result = ingest(spark, cfg)
    assert result.total.accepted == 6  # the changed file again, whole, and the new one
    metrics.push_ingest(prom.gateway, spark, result, cfg)
    assert prom.value(f"logberg_ingest_pending_files{job} == 0") == 0
    assert not prom.query(f"logberg_ingest_pending_oldest_file_timestamp_seconds{job}")
    assert spark.table("nginx_logs.access_logs").count() == 6


def test_a_gateway_that_is_not_an_http_url_is_named_before_spark_starts(
    lakehouse: LocalSettings,
) -> None:
    """Wrong configuration fails fast; a well-formed URL that does not answer is an outage
    (test_metrics_outage.py): the job goes on."""
    r = run_logberg(["analytics"], {**IN_PROCESS, metrics.GATEWAY_ENV: "ftp://gateway:9091"})
    assert r.returncode == 2
    assert f"{metrics.GATEWAY_ENV}=" in r.stderr and "expected http://host:port" in r.stderr
    assert "spark: in-process" not in r.stderr  # it failed before Spark started
