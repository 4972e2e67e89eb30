"""Re-runs and faults: the same application again, a driver deleted mid-ingest, the
metastore deleted during a run, two ingests at once; the tables stay exact."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.framework import (
    APP_TIMEOUT,
    EXAMPLES,
    METASTORE_PODS,
    Deployed,
    assert_exact,
    table_counts,
    wait_for,
)

# Every generated file ingested first (an earlier, interrupted run may have left some).
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.usefixtures("settled")]


def test_reapplying_the_same_application_adds_nothing(deployed: Deployed) -> None:
    before = table_counts(deployed)
    deployed.delete_app("logberg-ingest-example")
    deployed.k("apply", "-f", str(EXAMPLES / "ingest.yaml"))
    deployed.wait_app("logberg-ingest-example")
    assert table_counts(deployed) == before
    assert_exact(deployed)


def running_executor(d: Deployed, name: str) -> bool:
    status = d.app_status(name)
    state = (status.get("applicationState") or {}).get("state")
    if state in ("COMPLETED", "FAILED"):
        raise AssertionError(f"{name} ended ({state}) before the fault could be injected")
    return "RUNNING" in (status.get("executorState") or {}).values()


def test_a_driver_deleted_mid_ingest_is_retried_and_the_table_stays_exact(
    deployed: Deployed,
) -> None:
    deployed.generate(
        "--num-files", "3", "--lines-per-file", "12000", "--start-date", "2025-01-13",
        "--end-date", "2025-01-15", "--seed", "101", "--malformed-rate", "0.005",
    )  # fmt: skip
    name = "fault-driver"
    deployed.apply_app(name)
    wait_for(f"{name}'s executor to run", lambda: running_executor(deployed, name))
    driver = deployed.app_status(name)["driverInfo"]["podName"]
    deployed.k("delete", "pod", driver, "--wait=false")
    deployed.wait_app(name)
    status = deployed.app_status(name)
    print(f"\n{name}: driver {driver} deleted; attempts {status.get('executionAttempts')}")
    assert int(status.get("executionAttempts") or 0) >= 2, status
    assert_exact(deployed)
    deployed.delete_app(name)


def test_a_metastore_deleted_during_a_run_never_half_commits(deployed: Deployed) -> None:
    deployed.generate(
        "--num-files", "3", "--lines-per-file", "12000", "--start-date", "2025-01-16",
        "--end-date", "2025-01-18", "--seed", "102", "--malformed-rate", "0.005",
    )  # fmt: skip
    name = "fault-metastore"
    deployed.apply_app(name)
    wait_for(f"{name}'s executor to run", lambda: running_executor(deployed, name))
    deployed.k("delete", "pod", "-l", METASTORE_PODS, "--wait=false")
    state = ""

    def ended() -> bool:
        nonlocal state
        state = (deployed.app_status(name).get("applicationState") or {}).get("state", "")
        return state in ("COMPLETED", "FAILED")

    wait_for(f"{name} to end", ended, timeout=APP_TIMEOUT)
    attempts = deployed.app_status(name).get("executionAttempts")
    print(f"\n{name}: the metastore pod deleted mid-run; ended {state} after {attempts} attempts")
    deployed.k("rollout", "status", "deploy/hive-metastore", "--timeout=600s")
    # Whatever that run did, each file is in the table whole or not at all...
    per_file = {
        r[0]: int(r[1])
        for r in deployed.sql(
            "SELECT regexp_extract(source_file, 'raw/nginx/.*$', 0), COUNT(*) "
            "FROM nginx_logs.access_logs GROUP BY source_file"
        )
    }
    expected = {f["path"]: f["valid"] for m in deployed.manifests() for f in m["files"]}
    for path, n in per_file.items():
        assert n == expected[path], (path, n, expected[path])
    # ...and one more ingest makes the table exact.
    if state != "COMPLETED" or set(per_file) != set(expected):
        deployed.delete_app(name)
        deployed.apply_app(name)
        deployed.wait_app(name)
    assert_exact(deployed)
    deployed.delete_app(name)


def test_two_ingests_submitted_at_once_land_every_line_once(deployed: Deployed) -> None:
    """ScheduledSparkApplications default to concurrencyPolicy Forbid; correctness must not
    depend on it: two applications of the same ingest, created together."""
    deployed.generate(
        "--num-files", "4", "--lines-per-file", "6000", "--start-date", "2025-01-19",
        "--end-date", "2025-01-20", "--seed", "103", "--malformed-rate", "0.005",
    )  # fmt: skip
    docs = []
    for name in ("twin-a", "twin-b"):
        doc = yaml.safe_load((EXAMPLES / "ingest.yaml").read_text())
        doc["metadata"]["name"] = name
        docs.append(doc)
    deployed.k(
        "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )
    for name in ("twin-a", "twin-b"):
        deployed.wait_app(name)
    assert_exact(deployed)
    runs = deployed.sql(
        "SELECT files, replaced_concurrent FROM nginx_logs.ingest_runs "
        "ORDER BY started_at DESC LIMIT 2"
    )
    files = sorted(int(r[0]) for r in runs)
    replaced = sum(int(r[1]) for r in runs if r[1] != "NULL")
    # Either the second found the files done (files=0), or it replaced the first's rows
    # (and says so): never both writers adding rows.
    assert files[1] == 4 and (files[0] == 0 or replaced == files[0]), runs
    for name in ("twin-a", "twin-b"):
        deployed.delete_app(name)
