"""The chart's PrometheusRule through Prometheus' own `promtool test rules`: each alert fires
where it should and stays quiet where it should not, on series shaped like what the jobs
push (tests/integration/test_metrics.py pushes the real ones) and the Spark Operator's."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.prometheus import binaries
from tests.static.test_charts import docs, one

pytestmark = pytest.mark.static

INGEST = 'job="logberg_ingest"'
ANALYTICS = 'job="logberg_analytics"'
LAST_ANALYTICS = "logberg_analytics_last_success_timestamp_seconds"


def rules(sets: tuple[str, ...] = ()) -> dict[str, Any]:
    rule = one(
        docs("logberg", (), ("monitoring.prometheusRule.enabled=true", *sets)), "PrometheusRule"
    )
    return {"groups": rule["spec"]["groups"]}


def promtool(tmp_path: Path, rule_file: dict[str, Any], tests: list[dict[str, Any]]) -> str:
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule_file))
    (tmp_path / "test.yml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests})
    )
    check = subprocess.run(
        [str(binaries() / "promtool"), "check", "rules", "rules.yml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    r = subprocess.run(
        [str(binaries() / "promtool"), "test", "rules", "test.yml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return (r.stdout + r.stderr) if r.returncode else ""


def fired(labels: dict[str, str], summary: str, description: str) -> dict[str, Any]:
    return {
        "exp_labels": labels,
        "exp_annotations": {"summary": summary, "description": description},
    }


LAG_TEXT = (
    "A landed file has waited more than 7200s for an ingest (logberg_ingest_pending_files), or "
    "no ingest run has succeeded for that long. Check the ingest SparkApplications and the "
    "landing zone."
)
OLDEST = "logberg_ingest_pending_oldest_file_timestamp_seconds"
LAST_INGEST = "logberg_ingest_last_success_timestamp_seconds"


def series(name: str, instance: str, values: str) -> dict[str, str]:
    return {"series": f'{name}{{{INGEST},instance="{instance}"}}', "values": values}


def lags(instance: str) -> dict[str, Any]:
    return fired(
        {"severity": "warning", "instance": instance},
        f"logberg ingest of {instance} lags by 2h 15m 0s",
        LAG_TEXT,
    )


REJECT_TEXT = (
    "More than 0.05 of the lines were rejected: see logberg_ingest_rejected_lines by reason "
    "and nginx_logs.access_logs_rejects."
)
FAILED_TEXT = (
    "The Spark Operator counted a failed SparkApplication: `kubectl get sparkapplications` "
    "and `logberg k8s logs` say which and why."
)
STALE_TEXT = (
    "The gold tables are stale (or no analytics run has ever pushed its metrics). Check the "
    "analytics ScheduledSparkApplication."
)
KAFKA_TEXT = (
    "The lakehouse is more than 10000 messages behind the topic and the lag rose over 10m. "
    "Check the streaming ingest SparkApplication (ingest --from) and its logberg_kafka_batch_* "
    "figures."
)


def kafka_lag(instance: str, topic: str, partition: str, values: str) -> dict[str, str]:
    labels = f'job="logberg_kafka_ingest",instance="{instance}",topic="{topic}"'
    return {
        "series": f'logberg_kafka_consumer_lag{{{labels},partition="{partition}"}}',
        "values": values,
    }


# Each case: input series, then (eval time, alert, expected alerts) checks. Instance `a`
# crosses the threshold, `b` does not; early eval times are before `for:` has passed.
CASES: dict[str, dict[str, Any]] = {
    "ingest lag": {
        "input_series": [
            # Every run succeeds (a minute apart) for a, b and c. a: a file that landed at 0
            # is never taken; b: what waits is always a minute old; c: nothing ever waits.
            # d: nothing was waiting at its last push, but no run has succeeded since 0.
            series(OLDEST, "a", "0+0x200"),
            series(LAST_INGEST, "a", "0+60x200"),
            series(OLDEST, "b", "0+60x200"),
            series(LAST_INGEST, "b", "0+60x200"),
            series(LAST_INGEST, "c", "0+60x200"),
            series(LAST_INGEST, "d", "0+0x200"),
        ],
        "alert_rule_test": [
            {"eval_time": "100m", "alertname": "LogbergIngestLag", "exp_alerts": []},
            # over 7200 s from 121m on; pending for 10m, so not yet at 125m
            {"eval_time": "125m", "alertname": "LogbergIngestLag", "exp_alerts": []},
            {
                "eval_time": "135m",
                "alertname": "LogbergIngestLag",
                "exp_alerts": [lags("a"), lags("d")],
            },
        ],
    },
    "reject share": {
        "input_series": [
            {
                "series": f'logberg_ingest_lines{{{INGEST},instance="a",result="accepted"}}',
                "values": "90x10",
            },
            {
                "series": f'logberg_ingest_lines{{{INGEST},instance="a",result="rejected"}}',
                "values": "10x10",
            },
            {
                "series": f'logberg_ingest_lines{{{INGEST},instance="b",result="accepted"}}',
                "values": "99x10",
            },
            {
                "series": f'logberg_ingest_lines{{{INGEST},instance="b",result="rejected"}}',
                "values": "1x10",
            },
        ],
        "alert_rule_test": [
            {
                "eval_time": "5m",
                "alertname": "LogbergRejectShare",
                "exp_alerts": [
                    fired(
                        {"severity": "warning", "instance": "a"},
                        "logberg's last ingest run of a rejected 10% of its lines",
                        REJECT_TEXT,
                    )
                ],
            },
        ],
    },
    "failed application": {
        "input_series": [
            # one failure at 3m; none after
            {
                "series": 'spark_application_failure_count{namespace="logberg"}',
                "values": "0 0 0 1x60",
            },
            # the operator's first failure: the series appears at 1 (at 3m)
            {"series": 'spark_application_failure_count{namespace="new"}', "values": "_ _ _ 1x60"},
            {"series": 'spark_application_failure_count{namespace="other"}', "values": "0x60"},
        ],
        "alert_rule_test": [
            {"eval_time": "2m", "alertname": "LogbergSparkApplicationFailed", "exp_alerts": []},
            {
                "eval_time": "5m",
                "alertname": "LogbergSparkApplicationFailed",
                "exp_alerts": [
                    fired(
                        {"severity": "critical", "namespace": ns},
                        "A SparkApplication failed in the last 15 minutes",
                        FAILED_TEXT,
                    )
                    for ns in ("logberg", "new")
                ],
            },
            {"eval_time": "30m", "alertname": "LogbergSparkApplicationFailed", "exp_alerts": []},
        ],
    },
    "stale analytics": {
        "input_series": [
            {
                "series": f'{LAST_ANALYTICS}{{{ANALYTICS},instance="a"}}',
                "values": "0+0x1500",
            },
            {
                "series": f'{LAST_ANALYTICS}{{{ANALYTICS},instance="b"}}',
                "values": "0+60x1500",
            },
        ],
        "alert_rule_test": [
            {"eval_time": "1380m", "alertname": "LogbergAnalyticsStale", "exp_alerts": []},
            {
                "eval_time": "1460m",
                "alertname": "LogbergAnalyticsStale",
                "exp_alerts": [
                    fired(
                        {"severity": "warning", "instance": "a"},
                        "No successful logberg analytics run for over 86400s",
                        STALE_TEXT,
                    )
                ],
            },
        ],
    },
    "kafka lag growing": {
        "input_series": [
            # Partitions 0 and 1 of topic t on instance a fall behind by 100 messages a minute
            # each from 20m on (the stream stopped; a scheduled --dry-run keeps pushing). Topic u is
            # far behind but catching up; topic v grows, but stays under the threshold.
            kafka_lag("a", "t", "0", "0x20 100+100x80"),
            kafka_lag("a", "t", "1", "0x20 100+100x80"),
            kafka_lag("a", "u", "0", "90000-100x80"),
            kafka_lag("a", "v", "0", "0+10x80"),
        ],
        "alert_rule_test": [
            {"eval_time": "15m", "alertname": "LogbergKafkaLagGrowing", "exp_alerts": []},
            # over 10000 from 71m on (2 x 100 x 51); pending for 10m
            {"eval_time": "78m", "alertname": "LogbergKafkaLagGrowing", "exp_alerts": []},
            {
                "eval_time": "85m",
                "alertname": "LogbergKafkaLagGrowing",
                "exp_alerts": [
                    fired(
                        {"severity": "warning", "instance": "a", "topic": "t"},
                        "logberg is 13000 messages behind topic t, and falling further behind",
                        KAFKA_TEXT,
                    )
                ],
            },
        ],
    },
    "analytics never pushed": {
        "input_series": [
            {
                "series": f'logberg_ingest_lines{{{INGEST},instance="a",result="accepted"}}',
                "values": "90x30",
            },
        ],
        "alert_rule_test": [
            {"eval_time": "5m", "alertname": "LogbergAnalyticsStale", "exp_alerts": []},
            {
                "eval_time": "15m",
                "alertname": "LogbergAnalyticsStale",
                "exp_alerts": [
                    fired(
                        {"severity": "warning", "job": "logberg_analytics"},
                        "No successful logberg analytics run for over 86400s",
                        STALE_TEXT,
                    )
                ],
            },
        ],
    },
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_alert_fires_and_stays_quiet_as_it_should(tmp_path: Path, case: str) -> None:
    failed = promtool(tmp_path, rules(), [{"interval": "1m", **CASES[case]}])
    assert not failed, failed


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The checks above can fail: instance b's 1 % rejects must not alert."""
    test = {
        "interval": "1m",
        "input_series": CASES["reject share"]["input_series"],
        "alert_rule_test": [
            {
                "eval_time": "5m",
                "alertname": "LogbergRejectShare",
                "exp_alerts": [fired({"severity": "warning", "instance": "b"}, "x", "y")],
            }
        ],
    }
    assert "FAILED" in promtool(tmp_path, rules(), [test])


def test_thresholds_and_labels_come_from_the_values(tmp_path: Path) -> None:
    """A lower reject share makes instance b's 1 % alert too; extra alert labels ride along."""
    sets = (
        "monitoring.prometheusRule.rejectShare=0.005",
        "monitoring.prometheusRule.alertLabels.team=data",
    )
    test = {
        "interval": "1m",
        "input_series": CASES["reject share"]["input_series"],
        "alert_rule_test": [
            {
                "eval_time": "5m",
                "alertname": "LogbergRejectShare",
                "exp_alerts": [
                    fired(
                        {"severity": "warning", "instance": i, "team": "data"},
                        f"logberg's last ingest run of {i} rejected {share} of its lines",
                        REJECT_TEXT.replace("0.05", "0.005"),
                    )
                    for i, share in (("a", "10%"), ("b", "1%"))
                ],
            }
        ],
    }
    failed = promtool(tmp_path, rules(sets), [test])
    assert not failed, failed
