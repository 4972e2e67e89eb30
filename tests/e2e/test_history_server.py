"""What the demo's jobs did, after their drivers are gone: their event logs in S3 and the
release's History Server (values-kind.yaml turns both on), reached as a user does, through
`logberg k8s ui`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.e2e.framework import BUCKET, CONTEXT, NS, Deployed, wait_for
from tests.helpers import event_logs

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

DEMO_APPS = ("logberg-ingest-example", "logberg-analytics-example")
PREFIX = "spark-events/"


@contextmanager
def ui(d: Deployed, *args: str) -> Iterator[tuple[str, list[str]]]:
    """`logberg k8s ui ARGS` running: the address it printed and its other lines."""
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "logberg"), "k8s",
         f"--kubeconfig={d.home / 'kubeconfig'}", f"--context={CONTEXT}", f"--namespace={NS}",
         "ui", *args],
        cwd=REPO, env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    printed: list[str] = []
    try:
        for line in proc.stdout:
            printed.append(line.rstrip("\n"))
            if line.startswith("Ctrl-C"):
                break
        else:
            raise AssertionError(f"logberg k8s ui {args} ended: {printed} {proc.stderr.read()}")  # type: ignore[union-attr]
        [url] = re.findall(r"(http://127\.0\.0\.1:\d+\S*)$", printed[0])
        yield url, printed[1:]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # never left running: it holds the cluster's kubeconfig
            proc.kill()
            proc.wait()
            raise AssertionError(f"logberg k8s ui {args} did not stop on Ctrl-C") from None
        assert rc == 0, proc.stderr.read() if proc.stderr else rc


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
    return json.loads(body) if "/api/v1/" in url else body.decode()


def app_ids(d: Deployed) -> dict[str, str]:
    ids = {name: d.app_status(name).get("sparkApplicationId", "") for name in DEMO_APPS}
    assert all(ids.values()), ids
    return ids


def test_the_demo_jobs_event_logs_are_in_s3_and_hold_no_secret(deployed: Deployed) -> None:
    s3 = deployed.s3()
    keys = {
        o["Key"]: o["Size"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=PREFIX)
        for o in page.get("Contents", [])
    }
    assert keys.get(PREFIX) == 0, sorted(keys)[:5]  # the marker the init containers wrote
    secrets = [
        deployed.secret("logberg-s3", "AWS_ACCESS_KEY_ID"),
        deployed.secret("logberg-s3", "AWS_SECRET_ACCESS_KEY"),
        deployed.secret("logberg-metastore-db", "password"),
    ]
    for name, app in app_ids(deployed).items():
        folder = f"{PREFIX}eventlog_v2_{app}/"
        files = sorted(k for k in keys if k.startswith(folder))
        assert f"{folder}appstatus_{app}" in files, (name, files)
        logs = [k for k in files if re.fullmatch(rf"{folder}events_\d+_{app}\.zstd", k)]
        assert logs, (name, files)
        text = ""
        for key in logs:
            text += event_logs.text(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
        assert text.startswith('{"Event":"SparkListenerLogStart"'), text[:200]
        assert '"Event":"SparkListenerApplicationEnd"' in text, name
        assert "spark.eventLog.dir" in text  # the properties are there, the keys are not
        for secret in secrets:
            assert secret not in text, f"{name}: a credential in its event log"


def test_the_history_server_lists_the_demo_jobs_with_jobs_and_stages(deployed: Deployed) -> None:
    ids = app_ids(deployed)
    with ui(deployed) as (base, _):
        api = f"{base.rstrip('/')}/api/v1"

        def completed() -> bool:
            apps = {a["id"]: a for a in get(f"{api}/applications?status=completed")}
            return all(app in apps for app in ids.values())

        wait_for("the History Server to list the demo's applications", completed, timeout=300)
        for name, app in ids.items():
            [attempt] = get(f"{api}/applications/{app}")["attempts"]
            assert attempt["completed"] is True, (name, attempt)
            jobs = get(f"{api}/applications/{app}/jobs")
            assert jobs and {j["status"] for j in jobs} == {"SUCCEEDED"}, (name, jobs[:2])
            stages = get(f"{api}/applications/{app}/stages")
            assert stages and {s["status"] for s in stages} <= {"COMPLETE", "SKIPPED"}, name
            assert "COMPLETE" in {s["status"] for s in stages}
        ingest = ids["logberg-ingest-example"]
        m = deployed.demo_manifest()
        lines = m["totals"]["valid"] + m["totals"]["malformed_total"]
        # The write of access_logs reads the good lines; the rejects' commit, the rejected.
        read = sum(s["inputRecords"] for s in get(f"{api}/applications/{ingest}/stages"))
        assert read >= lines, (read, m["totals"])
    # Once listed, `ui` prints them at start: each with its jobs page.
    with ui(deployed) as (base, listed):
        for app in ids.values():
            [line] = [ln for ln in listed if ln.startswith(f"{app}  ")]
            assert line.endswith(f"{base.rstrip('/')}/history/{app}/jobs/"), line
            assert "  completed  " in line, line


def test_ui_of_a_finished_app_opens_its_pages_on_the_history_server(deployed: Deployed) -> None:
    ids = app_ids(deployed)
    with ui(deployed, "logberg-analytics-example") as (url, _):
        app = ids["logberg-analytics-example"]
        assert url.endswith(f"/history/{app}/jobs/"), url
        page = get(url)
        assert app in page and "Spark Jobs" in page, page[:500]
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "logberg"), "k8s",
         f"--kubeconfig={deployed.home / 'kubeconfig'}", f"--context={CONTEXT}",
         f"--namespace={NS}", "ui", "no-such-app"],
        cwd=REPO, env=deployed.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "no SparkApplication 'no-such-app'" in proc.stderr
