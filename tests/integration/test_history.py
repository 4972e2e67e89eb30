"""Where a run's time went, on a laptop: every Spark process of a home (a command's own
session and the Spark Connect server) writes its event log, zstd-compressed and rolled,
under $LOGBERG_HOME/spark-events; Spark's History Server (`logberg local up --history`)
lists each run with its jobs and stages; `logberg ui` says where. The event logs hold
none of the home's secrets.

Real parts: `logberg` processes, the session's metastore and S3 server, a History Server
and a Spark Connect server started from the pinned PySpark's jars.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from logberg_platform import connect_server, history, local, s3server
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import free_port, port_open
from tests.conftest import run_logberg
from tests.helpers import event_logs
from tests.helpers.waiting import eventually
from tests.integration.modes import IN_PROCESS
from tests.integration.test_ingest import generate

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

APP_ID = re.compile(r"application (local-\d+)")


@pytest.fixture(scope="module")
def hs(lakehouse: LocalSettings) -> Iterator[history.History]:
    """This home's History Server, on a free port, for the module."""
    saved = os.environ.get(history.PORT_ENV)
    os.environ[history.PORT_ENV] = str(free_port())
    try:
        yield history.start(lakehouse)
    finally:
        history.stop(lakehouse)
        if saved is None:
            os.environ.pop(history.PORT_ENV, None)
        else:
            os.environ[history.PORT_ENV] = saved


@pytest.fixture(scope="module")
def s3_ingest(lakehouse: LocalSettings, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An in-process `logberg ingest` of generated files read from the home's S3 server
    (so its JVM holds the S3 keys): its application id and its manifest."""
    out = tmp_path_factory.mktemp("history-landing")
    manifest = generate(out, 71)
    client = s3server.boto3_client(lakehouse)
    prefix = "history-test/raw"
    files = sorted(out.rglob("dt=*/access-*"))
    assert len(files) == len(manifest["files"])
    for f in files:
        client.upload_file(str(f), "logberg", f"{prefix}/{f.relative_to(out).as_posix()}")
    r = run_logberg(["ingest", "--input", f"s3a://logberg/{prefix}/"], IN_PROCESS)
    assert r.returncode == 0, r.stderr[-3000:]
    found = APP_ID.search(r.stderr)
    assert found, r.stderr[-2000:]
    return {"app": found.group(1), "manifest": manifest}


def listed(base: str, app: str) -> dict[str, Any] | None:
    """The application as the History Server lists it, once its run has ended."""
    for a in history.applications(base, limit=200):
        if a["id"] == app and a["attempts"] and a["attempts"][0]["completed"]:
            return a
    return None


def event_text(s: LocalSettings, app: str | None = None) -> str:
    """The decompressed event logs of one application (or of all): a running
    application's last file ends mid-frame, so that end is left out."""
    pattern = f"eventlog_v2_{app or '*'}/events_*"
    out = []
    for f in sorted(history.events_dir(s).glob(pattern)):
        with f.open("rb") as raw:
            out.append(event_logs.text(raw))
    return "\n".join(out)


def test_an_ingest_is_listed_with_its_jobs_and_stages(
    lakehouse: LocalSettings, hs: history.History, s3_ingest: dict[str, Any]
) -> None:
    app = s3_ingest["app"]
    found = eventually(f"{app} listed as completed", lambda: listed(hs.url, app))
    assert found["name"] == "logberg-ingest"
    jobs = history.api(hs.url, f"applications/{app}/jobs")
    assert jobs and {j["status"] for j in jobs} == {"SUCCEEDED"}, jobs
    stages = history.api(hs.url, f"applications/{app}/stages")
    assert stages and {s["status"] for s in stages} <= {"COMPLETE", "SKIPPED"}, stages
    # The write of access_logs read the good lines, the rejects commit the rejected ones.
    read = sum(s["inputRecords"] for s in stages)
    total = s3_ingest["manifest"]["totals"]
    assert read >= total["valid"] + total["malformed_total"]

    # Its event log: compressed and in the rolling layout, its first and last events there.
    folder = history.events_dir(lakehouse) / f"eventlog_v2_{app}"
    files = sorted(p.name for p in folder.iterdir())
    assert f"events_1_{app}.zstd" in files and f"appstatus_{app}" in files, files
    events = [json.loads(line)["Event"] for line in event_text(lakehouse, app).splitlines()]
    assert events[0] == "SparkListenerLogStart"
    assert "SparkListenerApplicationEnd" in events


def test_ui_prints_the_address_and_the_run(hs: history.History, s3_ingest: dict[str, Any]) -> None:
    app = s3_ingest["app"]
    eventually(f"{app} listed", lambda: listed(hs.url, app))
    r = run_logberg(["ui", "--limit", "50"])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[0] == f"history   {hs.url}"
    line = next(x for x in r.stdout.splitlines() if x.startswith(app))
    assert "logberg-ingest  completed" in line
    assert line.endswith(f"{hs.url}/history/{app}/jobs/")


def test_a_command_on_the_connect_server_shows_as_its_jobs(
    lakehouse: LocalSettings, hs: history.History
) -> None:
    """The warm server writes its event log too: a query run on it is a job of the
    server's application, listed while the server runs."""
    s = lakehouse
    cfg = local.lakehouse_config(s)
    connect_server.start(s, cfg, local.spark_runtime(s, cfg))
    try:
        marker = f"history_probe_{os.getpid()}"
        r = run_logberg(
            ["query", f"SELECT '{marker}' AS m, count(*) AS n FROM range(100)"],
            {"LOGBERG_SPARK_MODE": "connect"},
        )
        assert r.returncode == 0, r.stderr[-2000:]

        def server_app() -> dict[str, Any] | None:
            running = [
                a
                for a in history.applications(hs.url, limit=200)
                if a["name"] == "logberg-connect" and not a["attempts"][0]["completed"]
            ]
            return running[0] if running else None

        app = eventually("the Spark Connect server's application", server_app)["id"]

        def probe_job() -> list[dict[str, Any]]:
            queries = history.api(hs.url, f"applications/{app}/sql?details=true&length=1000")
            return [q for q in queries if marker in json.dumps(q)]  # in its plan

        eventually(f"the query {marker} among the server's SQL executions", probe_job)
    finally:
        connect_server.stop(s)


def test_event_logs_hold_no_secrets(lakehouse: LocalSettings, s3_ingest: dict[str, Any]) -> None:
    """Every event log of this home (the test session's own, the ingest's from S3, the
    Spark Connect server's) records the Spark and Hadoop properties, and none of the
    home's S3 keys or its Connect token."""
    text = event_text(lakehouse)
    assert "SparkListenerEnvironmentUpdate" in text
    assert lakehouse.s3_endpoint in text  # the S3A settings are there, the keys are not
    keys = s3server.credentials(lakehouse)
    secrets = {"S3 secret key": keys["secret_key"], "S3 access key": keys["access_key"]}
    token = connect_server.token_file(lakehouse)
    if token.is_file():
        secrets["Spark Connect token"] = token.read_text().strip()
    for what, value in secrets.items():
        assert value not in text, f"the {what} is in an event log under spark-events"


def test_a_wrong_event_log_setting_is_named(lakehouse: LocalSettings) -> None:
    r = run_logberg(["query", "SELECT 1"], {**IN_PROCESS, history.EVENT_LOG_ENV: "yes"})
    assert r.returncode != 0
    assert f"{history.EVENT_LOG_ENV}='yes'" in r.stderr, r.stderr[-2000:]


def test_no_event_log_when_turned_off(lakehouse: LocalSettings) -> None:
    r = run_logberg(["query", "SELECT 1"], {**IN_PROCESS, history.EVENT_LOG_ENV: "false"})
    assert r.returncode == 0, r.stderr[-2000:]
    app = APP_ID.search(r.stderr)
    assert app, r.stderr[-2000:]
    assert not (history.events_dir(lakehouse) / f"eventlog_v2_{app.group(1)}").exists()


def test_local_status_and_down_cover_the_history_server(tmp_path: Path) -> None:
    """A History Server of another home: `status` shows it, `down` stops it (and only
    that home's)."""
    saved = {k: os.environ.get(k) for k in ("LOGBERG_HOME", history.PORT_ENV)}
    os.environ.update({"LOGBERG_HOME": str(tmp_path), history.PORT_ENV: str(free_port())})
    try:
        other = LocalSettings.from_env()
        started = history.start(other)
        st = {x.name: x for x in local.status(other)}["history-server"]
        assert st.running and st.where == started.url
        assert "history-server: stopped" in local.down(other)
        assert not port_open(started.port)
        assert history.running(other) is None
    finally:
        history.stop(LocalSettings.from_env())
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_a_port_in_use_names_the_setting(hs: history.History, tmp_path: Path) -> None:
    r = run_logberg(
        ["local", "up", "--no-connect", "--history"],
        {"LOGBERG_HOME": str(tmp_path), history.PORT_ENV: str(hs.port)},
    )
    assert r.returncode != 0
    assert f"{history.PORT_ENV}={hs.port}" in r.stderr, r.stderr[-2000:]
