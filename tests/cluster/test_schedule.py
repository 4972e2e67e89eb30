"""A ScheduledSparkApplication fires and records its run."""

from __future__ import annotations

import pytest

from tests.cluster.framework import (
    NS,
    Deployed,
    assert_exact,
    wait_for,
)
from tests.conftest import REPO

# Every generated file ingested first (an earlier, interrupted run may have left some).
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("settled")]


def test_a_scheduled_ingest_fires_and_records_its_run(deployed: Deployed) -> None:
    before = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=true", "--set=ingest.schedule=* * * * *",
        "--wait",
    )  # fmt: skip
    last = ""

    def fired() -> bool:
        nonlocal last
        s = deployed.obj("scheduledsparkapplication", "logberg-ingest").get("status") or {}
        last = s.get("lastRunName", "")
        return bool(last)

    wait_for("the schedule to fire", fired, timeout=240)
    deployed.wait_app(last)
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=false", "--wait",
    )  # fmt: skip
    after = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    assert after > before
    assert_exact(deployed)
