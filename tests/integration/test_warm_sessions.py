"""What a job command sees is the landing and the tables as they are when it runs, in both
Spark modes, though on the warm server it takes up the session an earlier command left
(`logberg.lakehouse.connect_pool`): files added one by one to a directory it has listed,
a file replaced in place, a file landed after the last listing (#53); and the session a
command hands on holds nothing a session of its own would not (settings, views, the
current catalog and namespace).

The commands run as real `logberg` processes, one after another, so they take up one
server session (slot 0); the server is this home's real Spark Connect server.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from logberg_platform import connect_server
from logberg_platform.local_settings import LocalSettings
from tests.conftest import REPO, reset_namespace
from tests.helpers.prometheus import pushgateway
from tests.integration.modes import MODES, ok

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

DAY = "2025-02-01"
SUMMARY = re.compile(r"files=(\d+) \(of (\d+) seen, (\d+) changed\)")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pushgateway(tmp_path_factory.mktemp("gateway")) as url:
        yield url


def land(landing: Path, seed: int, lines: int = 500) -> tuple[Path, int]:
    """One generated file of DAY in `landing` (a name of its own per seed): (path, its
    accepted lines, by the generator's manifest)."""
    out = landing.parent / f"gen-{seed}"
    subprocess.run(
        [
            sys.executable, "-m", "generator", "--output", out.as_uri(), "--num-files", "1",
            "--lines-per-file", str(lines), "--start-date", DAY, "--end-date", DAY,
            "--seed", str(seed), "--malformed-rate", "0.01", "--quiet",
        ],
        check=True, cwd=REPO, capture_output=True,
    )  # fmt: skip
    manifest = json.loads(next((out / "raw" / "nginx" / "_manifests").glob("*.json")).read_text())
    (made,) = (out / "raw" / "nginx").glob(f"dt={DAY}/access-*")
    dest = landing / "raw" / "nginx" / f"dt={DAY}" / made.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(made, dest)
    shutil.rmtree(out)
    return dest, int(manifest["totals"]["valid"])


def summary(r: subprocess.CompletedProcess[str]) -> tuple[int, int, int]:
    """(files read, files seen, of them changed) of an ingest's summary line."""
    found = SUMMARY.search(r.stdout)
    assert found, r.stdout
    return int(found[1]), int(found[2]), int(found[3])


def rows(spark: SparkSession) -> int:
    return int(spark.sql("SELECT COUNT(*) FROM nginx_logs.access_logs").collect()[0][0])


def pushed(gateway: str, name: str) -> float | None:
    """The value of the gauge `name` in the Pushgateway's logberg_ingest group."""
    with urllib.request.urlopen(f"{gateway}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and 'job="logberg_ingest"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.parametrize("mode", MODES)
def test_files_added_one_by_one_to_a_listed_directory_are_all_ingested(
    spark: SparkSession, server: LocalSettings, tmp_path: Path, mode: str
) -> None:
    """Hourly files rotating into one dt= directory: each ingest reads the one new file,
    though the warm session listed the directory before. (Before #53 the fourth warm
    ingest was the first given an earlier command's listing; in-process, every command
    lists afresh, and two rounds show it: a second driver never sees the first's listing.)"""
    reset_namespace(spark)
    landing = tmp_path / "landing"
    total = 0
    seeds = (200, 201, 202, 203, 204) if mode == "connect" else (200, 201)
    for n, seed in enumerate(seeds, start=1):
        _, valid = land(landing, seed)
        total += valid
        r = ok(["ingest", "--input", landing.as_uri()], MODES[mode])
        assert summary(r) == (1, n, 0), (n, r.stdout)
        assert rows(spark) == total, n


@pytest.mark.parametrize("mode", MODES)
def test_a_file_replaced_in_place_is_ingested_again_as_changed(
    spark: SparkSession, server: LocalSettings, tmp_path: Path, mode: str
) -> None:
    reset_namespace(spark)
    landing = tmp_path / "landing"
    path, _ = land(landing, 210)
    ok(["ingest", "--input", landing.as_uri()], MODES[mode])
    # Nothing new, twice on the server: the second runs the plans of the first as the
    # ingest after the replacement runs the second's (the warm session's steady state).
    for _ in range(2 if mode == "connect" else 1):
        assert summary(ok(["ingest", "--input", landing.as_uri()], MODES[mode])) == (0, 1, 0)
    # Other content under the same name: another size and modification time.
    other, valid = land(tmp_path / "other", 211, lines=700)
    shutil.copyfile(other, path)
    r = ok(["ingest", "--input", landing.as_uri()], MODES[mode])
    assert summary(r) == (1, 1, 1), r.stdout
    assert rows(spark) == valid


@pytest.mark.parametrize("mode", MODES)
def test_the_pending_files_count_a_file_landed_after_the_last_listing(
    spark: SparkSession, server: LocalSettings, gateway: str, tmp_path: Path, mode: str
) -> None:
    """`ingest --dry-run` lists (and pushes as the pending gauges) the files that wait, by a
    listing of the landing as it is now; the last ingest's other figures stay pushed."""
    reset_namespace(spark)
    landing = tmp_path / "landing"
    first, _ = land(landing, 220)
    env = {**MODES[mode], "LOGBERG_PUSHGATEWAY": gateway}
    ok(["ingest", "--input", landing.as_uri()], env)
    accepted = pushed(gateway, "logberg_ingest_lines")
    assert pushed(gateway, "logberg_ingest_pending_files") == 0
    r = ok(["ingest", "--input", landing.as_uri(), "--dry-run"], env)
    assert r.stdout.splitlines()[-1] == "0 file(s) to ingest (0 changed) of 1 listed"
    later, _ = land(landing, 221)
    r = ok(["ingest", "--input", landing.as_uri(), "--dry-run"], env)
    lines = r.stdout.splitlines()
    assert lines[-1] == "1 file(s) to ingest (0 changed) of 2 listed", r.stdout
    assert lines[0].startswith("new ") and lines[0].endswith(f"/{later.name}"), lines[0]
    assert pushed(gateway, "logberg_ingest_pending_files") == 1
    oldest = pushed(gateway, "logberg_ingest_pending_oldest_file_timestamp_seconds")
    assert oldest == pytest.approx(later.stat().st_mtime, abs=1e-3)  # the listing's ms
    assert pushed(gateway, "logberg_ingest_lines") == accepted  # the run's figures stay
    assert first.name not in r.stdout


# Run in a process of its own, on the server's session slot 0 (the one the commands took
# up), or (argv[2] == "own") on a session of its own: what the session holds, as JSON.
SESSION_STATE = """
import json, sys
from logberg.lakehouse.connect import remote_session
from logberg_platform import connect_server
from logberg_platform.local_settings import LocalSettings
s = LocalSettings.from_env()
server = connect_server.client(s, connect_server.served(s))
spark = remote_session(server, reuse=sys.argv[1] == "slot")
row = spark.sql("SELECT current_catalog() AS c, current_database() AS d").first()
print(json.dumps({
    "settings": sorted([r.key, r.value] for r in spark.sql("SET").collect()),
    "views": [
        r.viewName for r in spark.sql("SHOW VIEWS IN spark_catalog.default").collect()
        if r.isTemporary
    ],
    "catalog": row.c, "database": row.d,
}))
"""


def session_state(where: str) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-c", SESSION_STATE, where],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(json.loads(r.stdout))


def test_a_session_handed_on_holds_what_a_session_of_its_own_holds(
    spark: SparkSession, server: LocalSettings, tmp_path: Path
) -> None:
    """After every kind of job command, the session it hands on has the settings, the
    (no) temporary views and the current catalog and namespace of a new session."""
    reset_namespace(spark)
    landing = tmp_path / "landing"
    for seed in (230, 231):
        land(landing, seed)
    env = MODES["connect"]
    slot = connect_server.sessions_dir(server) / "0.json"
    ok(["run", "--input", landing.as_uri()], env)
    used = json.loads(slot.read_text())["session_id"]
    for args in (
        ["ingest", "--input", landing.as_uri(), "--full"],
        ["maintain", "--table", "access_logs"],
        ["report", "--output", str(tmp_path / "report.html")],
        ["doctor"],
    ):
        ok(args, env)
    own = session_state("own")
    assert own["catalog"] == "logberg" and own["views"] == []
    handed_on = session_state("slot")
    assert json.loads(slot.read_text())["session_id"] == used  # the commands' session
    theirs, mine = (
        dict(map(tuple, own.pop("settings"))),
        dict(map(tuple, handed_on.pop("settings"))),
    )
    changed = {k: (mine.get(k), theirs.get(k)) for k in mine.keys() | theirs.keys()}
    assert {k: v for k, v in changed.items() if v[0] != v[1]} == {}, "settings left behind"
    assert handed_on == own
