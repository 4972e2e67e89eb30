"""A ScheduledSparkApplication fires and records its run. The schedule is `@every 5s` (the
operator's cron parser takes descriptors), suspended once it has fired, so the test waits
seconds for a run rather than for the next minute, and no second run starts."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.e2e.framework import (
    NS,
    Deployed,
    assert_exact,
    wait_for,
)

# Every generated file ingested first (an earlier, interrupted run may have left some).
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("settled")]


def test_a_scheduled_ingest_fires_and_records_its_run(deployed: Deployed) -> None:
    before = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=true", "--set=ingest.schedule=@every 5s",
        "--wait",
    )  # fmt: skip
    last = ""

    def fired() -> bool:
        nonlocal last
        s = deployed.obj("scheduledsparkapplication", "logberg-ingest").get("status") or {}
        last = s.get("lastRunName", "")
        return bool(last)

    wait_for("the schedule to fire", fired, timeout=240, every=1)
    # No second run: concurrencyPolicy Forbid holds the next tick only while this one runs.
    deployed.k(
        "patch", "scheduledsparkapplication", "logberg-ingest", "--type=merge",
        "--patch", '{"spec": {"suspend": true}}',
    )  # fmt: skip
    deployed.wait_app(last)
    deployed.helm(
        "upgrade", "logberg", str(REPO / "charts" / "logberg"), f"--namespace={NS}",
        "--reuse-values", "--set=ingest.enabled=false", "--wait",
    )  # fmt: skip
    after = int(deployed.sql("SELECT COUNT(*) FROM nginx_logs.ingest_runs")[0][0])
    assert after > before
    assert_exact(deployed)
