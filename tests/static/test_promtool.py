"""logberg's metrics checked by Prometheus' own promtool (`make prometheus`)."""

from __future__ import annotations

import subprocess

import pytest

from logberg.pipeline.analytics import AnalyticsResult
from logberg.pipeline.ingest.batch import BatchResult, IngestResult
from logberg.pipeline.metrics import analytics_metrics, exposition, ingest_metrics
from tests.helpers.prometheus import binaries

pytestmark = pytest.mark.static


def promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binaries() / "promtool"), "check", "metrics"],
        input=text, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_runs_metrics_pass_promtool() -> None:
    ingest = IngestResult(
        "r1",
        seen=3,
        changed=0,
        total=BatchResult(files=2, lines=10, accepted=8, rejected=2, bytes=999,
                          seconds={"parse_write": 1.5, "rejects": 0.2}),
        duration_s=2.5,
    )  # fmt: skip
    analytics = AnalyticsResult(
        days=[], weeks=[], ingest_runs=1, top_n=10, duration_s=3.0,
        steps={"setup": 0.4, "daily_top_ips": 0.9},
    )  # fmt: skip
    text = exposition(
        [
            *ingest_metrics(ingest, {"bad_ip": 1, "unparseable": 1}, 1.6e9, 1.7e9, (1.5e9, 1.6e9)),
            *analytics_metrics(analytics, {"daily_top_ips": (40, 120)}, 1.7e9),
        ]
    )
    r = promtool_check(text)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'logberg_ingest_rejected_lines{reason="bad_ip"} 1' in text
    assert 'logberg_analytics_table_rows{table="daily_top_ips"} 120' in text


def test_promtool_does_reject_a_malformed_exposition() -> None:
    """The check above can fail: promtool refuses a sample without its TYPE's rules."""
    r = promtool_check("# TYPE logberg_x gauge\nlogberg_x{a=b} 1\n")
    assert r.returncode != 0
