"""Ingest end to end: generator -> ingest, checked against the generator's ground truth;
re-runs, a killed run, concurrent runs and changed files."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from logberg.lakehouse.schema import ACCESS_LOGS
from logberg.pipeline.ingest import batch, commit, plan, reader
from logberg.pipeline.ingest.config import IngestConfig
from tests.conftest import REPO, run_logberg, run_side_by_side
from tests.integration.modes import IN_PROCESS

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]


def generate(out: Path, seed: int, *extra: str) -> dict[str, Any]:
    args = [
        sys.executable,
        "-m",
        "generator",
        "--output",
        out.as_uri(),
        "--num-files",
        "4",
        "--lines-per-file",
        "4000",
        "--start-date",
        "2025-03-01",
        "--end-date",
        "2025-03-02",
        "--seed",
        str(seed),
        "--malformed-rate",
        "0.01",
        "--quiet",
        *extra,
    ]
    subprocess.run(args, check=True, cwd=REPO, capture_output=True)
    manifests = list((out / "raw" / "nginx" / "_manifests").glob("*.json"))
    assert len(manifests) == 1
    return dict(json.loads(manifests[0].read_text()))


def file_uris(spark, manifest: dict[str, Any]) -> list[str]:
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
    # Spark reports local files as file:/… (one slash), URL-encoded.
    return [
        str(path(f["uri"]).toUri().toString()).replace("file:///", "file:/")
        for f in manifest["files"]
    ]


def in_list(uris: list[str]) -> str:
    return ", ".join(f"'{u}'" for u in uris)


def counts(spark, manifest: dict[str, Any]) -> dict[str, Any]:
    files = in_list(file_uris(spark, manifest))
    per_day = {
        str(r.date): r.n
        for r in spark.sql(
            f"SELECT date, COUNT(*) AS n FROM nginx_logs.access_logs "
            f"WHERE source_file IN ({files}) GROUP BY date"
        ).collect()
    }
    total, distinct = spark.sql(
        f"SELECT COUNT(*), COUNT(DISTINCT event_id) FROM nginx_logs.access_logs "
        f"WHERE source_file IN ({files})"
    ).collect()[0]
    rejected = spark.sql(
        f"SELECT COUNT(*) FROM nginx_logs.access_logs_rejects WHERE source_file IN ({files})"
    ).collect()[0][0]
    return {"per_day": per_day, "accepted": total, "distinct": distinct, "rejected": rejected}


def expected(manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "per_day": {d: v["valid"] for d, v in manifest["days"].items()},
        "accepted": manifest["totals"]["valid"],
        "distinct": manifest["totals"]["valid"],
        "rejected": manifest["totals"]["malformed_total"],
    }


def ingest(landing: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    r = run_logberg(["ingest", "--input", landing.as_uri(), *extra])
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def dataset(
    lakehouse: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any], subprocess.CompletedProcess[str]]:
    """A generated landing, ingested once by the CLI (the first run's output too)."""
    out = tmp_path_factory.mktemp("landing-main")
    # A non-UTC offset: the UTC date must come out right across midnight.
    manifest = generate(out, 11, "--tz", "+0530", "--format", "main")
    return out, manifest, ingest(out)


def test_end_to_end_counts_match_ground_truth(spark, dataset) -> None:
    _, manifest, r = dataset
    assert f"lines_read={manifest['totals']['lines']}" in r.stdout
    assert "kept during the parse" in r.stderr  # no second read for the rejects (its log)
    # no table property names a column the table lacks (Iceberg warned once per data file)
    assert "Skipping dictionary encoding config" not in r.stderr
    assert counts(spark, manifest) == expected(manifest)
    run = spark.sql(
        "SELECT lines_read, accepted, rejected, files FROM nginx_logs.ingest_runs "
        "ORDER BY finished_at DESC LIMIT 1"
    ).collect()[0]
    assert run.lines_read == run.accepted + run.rejected == manifest["totals"]["lines"]
    assert run.files == len(manifest["files"])


def test_rerun_adds_nothing(spark, dataset) -> None:
    landing, manifest, _ = dataset
    again = ingest(landing)
    assert "files=0" in again.stdout  # incremental: nothing new to read
    full = ingest(landing, "--full")
    assert f"files={len(manifest['files'])}" in full.stdout
    # its own earlier rows, which the ledger lists: not another writer's
    assert "replaced_concurrent=0" in full.stdout
    assert "another writer" not in full.stderr
    assert counts(spark, manifest) == expected(manifest)


def test_row_counts_from_file_metadata_match_the_data(spark, dataset) -> None:
    _, manifest, _ = dataset
    uris = file_uris(spark, manifest)
    # ingest's own files hold one source file each: the counts come from the metadata alone
    bounds = spark.sql(
        "SELECT readable_metrics.source_file AS b FROM nginx_logs.access_logs.files "
        f"WHERE readable_metrics.source_file.lower_bound IN ({in_list(uris)})"
    ).collect()
    assert bounds and all(r.b.lower_bound == r.b.upper_bound for r in bounds)
    meta = commit.file_rows(spark, ACCESS_LOGS, uris)
    data = spark.sql(
        f"SELECT source_file, date, COUNT(*) AS n FROM nginx_logs.access_logs "
        f"WHERE source_file IN ({in_list(uris)}) GROUP BY source_file, date"
    ).collect()

    def fold(rows: Any) -> dict[tuple[str, Any], int]:
        out: dict[tuple[str, Any], int] = {}
        for f, d, n in rows:
            out[(f, d)] = out.get((f, d), 0) + n
        return out

    assert fold(meta) == fold((r.source_file, r.date, r.n) for r in data)
    assert sum(n for *_, n in meta) == manifest["totals"]["valid"]


def test_rejects_keep_raw_line_reason_and_line_number(spark, dataset) -> None:
    _, manifest, _ = dataset
    files = in_list(file_uris(spark, manifest))
    rows = spark.sql(
        f"SELECT reason, COUNT(*) AS n, MIN(line_number) AS lo, "
        f"SUM(CASE WHEN raw_line IS NULL OR raw_line = '' THEN 1 ELSE 0 END) AS empty "
        f"FROM nginx_logs.access_logs_rejects WHERE source_file IN ({files}) GROUP BY reason"
    ).collect()
    by_reason = {r.reason: r.n for r in rows}
    kinds = manifest["totals"]["malformed"]
    assert by_reason.get("bad_timestamp", 0) == kinds["bad_timestamp"]
    assert by_reason.get("unparseable", 0) == kinds["truncated"] + kinds["garbage"]
    assert all(r.lo >= 1 and r.empty == 0 for r in rows)


def test_rejects_over_the_memory_budget_are_read_again(
    spark, lakehouse, tmp_path: Path, monkeypatch, caplog
) -> None:
    manifest = generate(tmp_path, 23, "--end-date", "2025-03-01")
    monkeypatch.setattr(reader, "REJECT_BUDGET_CHARS", 100)
    caplog.set_level(logging.INFO, logger="logberg")
    batch.ingest(spark, IngestConfig(inputs=(tmp_path.as_uri(),)))
    assert "read again from the files" in caplog.text
    assert counts(spark, manifest) == expected(manifest)


GOOD_LINE = '1.2.3.4 - - [01/Mar/2025:10:00:00 +0000] "GET /a HTTP/1.1" 200 5 "-" "agent-{}"'


@pytest.mark.parametrize("budget", [None, 100], ids=["kept", "read-again"])
def test_bytes_that_are_not_utf8_are_kept_exactly(
    spark, lakehouse, tmp_path: Path, monkeypatch, budget: int | None
) -> None:
    """A good line with a bad byte is kept (the byte decoded as U+FFFD); a rejected one keeps
    its exact bytes in raw_bytes, whether the rejects were kept during the read or read
    again; a rejected line that is valid UTF-8 needs none."""
    bad_reject = b"\xff\xfe garbage \xc3( line"
    lines = [
        GOOD_LINE.format("\u00e9").encode(),
        GOOD_LINE.format("x").encode().replace(b"agent-x", b"agent-\xe9"),
        bad_reject,
        b"plain garbage",
    ]
    (tmp_path / "a.log").write_bytes(b"\n".join(lines) + b"\n")
    if budget is not None:
        monkeypatch.setattr(reader, "REJECT_BUDGET_CHARS", budget)
    batch.ingest(spark, IngestConfig(inputs=(tmp_path.as_uri(),)))
    (listed,) = plan.list_inputs(spark, [tmp_path.as_uri()], None)
    uri = listed.uri
    agents = spark.sql(
        f"SELECT user_agent FROM {ACCESS_LOGS} WHERE source_file = '{uri}' ORDER BY event_id"
    ).collect()
    assert sorted(r.user_agent for r in agents) == ["agent-\u00e9", "agent-\ufffd"]
    rejects = spark.sql(
        "SELECT line_number, raw_line, raw_bytes FROM nginx_logs.access_logs_rejects "
        f"WHERE source_file = '{uri}' ORDER BY line_number"
    ).collect()
    assert [(r.line_number, r.raw_line, r.raw_bytes) for r in rejects] == [
        (3, bad_reject.decode(errors="replace"), bytearray(bad_reject)),
        (4, "plain garbage", None),
    ]


def scan_metrics(spark, query: str) -> dict[str, int]:
    """Run `query` and return its Iceberg scan's metrics (files planned, files skipped)."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # the executed plan is the plan run
    try:
        df = spark.sql(query)
        df.collect()
        leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
        scans = [
            leaves.apply(i)
            for i in range(leaves.size())
            if "BatchScan" in leaves.apply(i).nodeName()
        ]
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", "true")
    assert len(scans) == 1, [leaves.apply(i).nodeName() for i in range(leaves.size())]
    metrics = scans[0].metrics()
    return {
        name: int(metrics.get(name).get().value())
        for name in ("resultDataFiles", "skippedDataFiles")
    }


def test_a_date_filter_reads_only_that_days_files(spark, dataset) -> None:
    _, manifest, _ = dataset
    day = min(manifest["days"])
    files = spark.sql(
        "SELECT COUNT(*) AS n, COUNT_IF(partition.date = DATE'" + day + "') AS on_day "
        "FROM nginx_logs.access_logs.data_files"
    ).collect()[0]
    assert 0 < files.on_day < files.n
    # SUM is not answered from metadata (COUNT would be): the scan really runs.
    got = scan_metrics(
        spark, f"SELECT SUM(response_size) FROM nginx_logs.access_logs WHERE date = DATE'{day}'"
    )
    # Without pruning every data file is planned. (Files of manifests pruned whole by their
    # partition ranges are not counted as skipped, so only the planned count is exact.)
    assert got["resultDataFiles"] == files.on_day
    assert got["skippedDataFiles"] <= files.n - files.on_day


@pytest.mark.slow
def test_killed_run_then_rerun_is_exact(spark, lakehouse, tmp_path: Path) -> None:
    manifest = generate(tmp_path, 12)
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "logberg"),
            "ingest",
            "--input",
            tmp_path.as_uri(),
            "--max-bytes-per-commit",
            "1",
        ],
        # The driver itself is killed: a run in its own JVM (on the session's server, the
        # kill would end the client only). The rerun below runs on the server.
        env={**os.environ, **IN_PROCESS},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # kill right after the first data commit, before its ledger entry
        if "ingest.batch: committed " in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    partial = counts(spark, manifest)
    assert 0 < partial["accepted"] < manifest["totals"]["valid"]
    ingest(tmp_path)
    assert counts(spark, manifest) == expected(manifest)


@pytest.mark.slow
def test_concurrent_ingests_of_different_files_both_land(spark, lakehouse, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ma, mb = generate(a, 21), generate(b, 22)
    logberg = str(Path(sys.executable).parent / "logberg")
    run_side_by_side(
        {p.name: [logberg, "ingest", "--input", p.as_uri()] for p in (a, b)}, tmp_path / "logs"
    )
    assert counts(spark, ma) == expected(ma)
    assert counts(spark, mb) == expected(mb)


def test_changed_file_has_its_rows_replaced(spark, lakehouse, tmp_path: Path) -> None:
    day = tmp_path / "raw" / "nginx" / "dt=2025-04-01"
    day.mkdir(parents=True)
    log = day / "live.log"
    line = (
        '9.9.9.9 - - [01/Apr/2025:10:00:{s:02d} +0000] "GET /p{s} HTTP/1.1" 200 5 "-" '
        '"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0"'
    )
    log.write_text("\n".join(line.format(s=s) for s in range(10)) + "\n")
    ingest(tmp_path)
    log.write_text("\n".join(line.format(s=s) for s in range(20, 45)) + "\n")
    r = ingest(tmp_path)
    assert "1 changed" in r.stdout
    uri = file_uris(spark, {"files": [{"uri": f"file://{log}"}]})[0]
    rows = spark.sql(
        f"SELECT url FROM nginx_logs.access_logs WHERE source_file = '{uri}'"
    ).collect()
    assert sorted(r.url for r in rows) == sorted(f"/p{s}" for s in range(20, 45))


def test_a_new_file_inside_a_compacted_files_bounds_lands_exactly(
    spark, lakehouse, tmp_path: Path
) -> None:
    # Compaction writes data files that hold several source files; a later file whose URI
    # sorts between theirs cannot be committed with an overwrite by source_file (Iceberg
    # cannot tell from metrics that the compacted file holds none of its rows).
    day = tmp_path / "raw" / "nginx" / "dt=2025-05-01"
    day.mkdir(parents=True)
    line = '8.8.8.8 - - [01/May/2025:10:00:00 +0000] "GET /{name}/{i} HTTP/1.1" 200 5 "-" "ua"'

    def write(name: str, n: int) -> str:
        (day / f"{name}.log").write_text(
            "".join(line.format(name=name, i=i) + "\n" for i in range(n))
        )
        return file_uris(spark, {"files": [{"uri": f"file://{day / name}.log"}]})[0]

    outer = [write("a", 5), write("z", 7)]
    ingest(tmp_path)
    spark.sql(
        "CALL logberg.system.rewrite_data_files(table => 'nginx_logs.access_logs', "
        f"where => \"source_file IN ({in_list(outer)})\", options => map('min-input-files', '2'))"
    ).collect()
    bounds = spark.sql(
        "SELECT readable_metrics.source_file.lower_bound AS lo, "
        "readable_metrics.source_file.upper_bound AS hi FROM nginx_logs.access_logs.files "
        f"WHERE readable_metrics.source_file.lower_bound = '{outer[0]}'"
    ).collect()
    assert [(r.lo, r.hi) for r in bounds] == [tuple(outer)], "one compacted file spans a..z"
    inner = write("m", 3)
    ingest(tmp_path)
    got = spark.sql(
        "SELECT source_file, COUNT(*) AS n FROM nginx_logs.access_logs "
        f"WHERE source_file IN ({in_list([*outer, inner])}) GROUP BY 1"
    ).collect()
    assert {r.source_file: r.n for r in got} == {outer[0]: 5, outer[1]: 7, inner: 3}
    # That MERGE commit carries the batch's tag (a session conf, per client over Connect).
    (last,) = spark.sql(
        f"SELECT operation, summary['{commit.TAG}'] AS tag FROM nginx_logs.access_logs.snapshots "
        "ORDER BY committed_at DESC LIMIT 1"
    ).collect()
    assert last.operation == "append" and last.tag, last  # a MERGE that only inserts
