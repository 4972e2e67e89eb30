"""Ingest end to end: generator -> ingest, checked against the generator's ground truth;
re-runs, a killed run, concurrent runs and changed files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_logberg

pytestmark = pytest.mark.integration


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


def file_uris(spark, manifest: dict[str, Any]) -> list[str]:  # type: ignore[no-untyped-def]
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
    # Spark reports local files as file:/… (one slash), URL-encoded.
    return [
        str(path(f["uri"]).toUri().toString()).replace("file:///", "file:/")
        for f in manifest["files"]
    ]


def in_list(uris: list[str]) -> str:
    return ", ".join(f"'{u}'" for u in uris)


def counts(spark, manifest: dict[str, Any]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
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


def ingest(landing: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    r = run_logberg(["ingest", "--input", landing.as_uri(), *extra], env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("landing-main")
    # A non-UTC offset: the UTC date must come out right across midnight.
    return out, generate(out, 11, "--tz", "+0530", "--format", "main")


def test_end_to_end_counts_match_ground_truth(spark, lakehouse_env, dataset) -> None:  # type: ignore[no-untyped-def]
    landing, manifest = dataset
    r = ingest(landing, lakehouse_env)
    assert f"lines_read={manifest['totals']['lines']}" in r.stdout
    assert "kept during the parse" in r.stdout  # no second read for the rejects
    assert counts(spark, manifest) == expected(manifest)
    run = spark.sql(
        "SELECT lines_read, accepted, rejected, files FROM nginx_logs.ingest_runs "
        "ORDER BY finished_at DESC LIMIT 1"
    ).collect()[0]
    assert run.lines_read == run.accepted + run.rejected == manifest["totals"]["lines"]
    assert run.files == len(manifest["files"])


def test_rerun_adds_nothing(spark, lakehouse_env, dataset) -> None:  # type: ignore[no-untyped-def]
    landing, manifest = dataset
    again = ingest(landing, lakehouse_env)
    assert "files=0" in again.stdout  # incremental: nothing new to read
    full = ingest(landing, lakehouse_env, "--full")
    assert f"files={len(manifest['files'])}" in full.stdout
    assert counts(spark, manifest) == expected(manifest)


def test_row_counts_from_file_metadata_match_the_data(spark, dataset) -> None:  # type: ignore[no-untyped-def]
    from logberg import ingest as ig
    from logberg import tables

    _, manifest = dataset
    uris = file_uris(spark, manifest)
    # ingest's own files hold one source file each: the counts come from the metadata alone
    bounds = spark.sql(
        "SELECT readable_metrics.source_file AS b FROM nginx_logs.access_logs.files "
        f"WHERE readable_metrics.source_file.lower_bound IN ({in_list(uris)})"
    ).collect()
    assert bounds and all(r.b.lower_bound == r.b.upper_bound for r in bounds)
    meta = ig.file_rows(spark, tables.ACCESS_LOGS, uris)
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


def test_agent_sample_reads_file_heads_plain_and_gzip(spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt
    import gzip

    from logberg import ingest as ig

    line = '1.2.3.4 - - [01/Mar/2025:00:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "{}"\n'
    (tmp_path / "a.log").write_text(line.format("agent-a") * 3 + line.format("agent-b"))
    with gzip.open(tmp_path / "b.log.gz", "wt") as f:
        f.write(line.format("agent-c") + "not a log line\n")
    files = [
        ig.InputFile((tmp_path / n).as_uri(), 0, dt.datetime.now()) for n in ("a.log", "b.log.gz")
    ]
    assert ig.sample_agents(spark, files) == ["agent-a", "agent-b", "agent-c"]
    # A head that ends inside a line drops that line.
    monkeypatch.setattr(ig, "SAMPLE_BYTES", len(line.format("agent-a")) * 3 + 20)
    assert ig.sample_agents(spark, files) == ["agent-a", "agent-c"]


def test_rejects_keep_raw_line_reason_and_line_number(spark, dataset) -> None:  # type: ignore[no-untyped-def]
    _, manifest = dataset
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


def test_rejects_over_the_memory_budget_are_read_again(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, monkeypatch, capsys
) -> None:
    from logberg import ingest as ig

    manifest = generate(tmp_path, 23, "--end-date", "2025-03-01")
    monkeypatch.setattr(ig, "REJECT_BUDGET_CHARS", 100)
    ig.ingest(spark, ig.IngestConfig(inputs=[tmp_path.as_uri()]))
    assert "read again from the files" in capsys.readouterr().out
    assert counts(spark, manifest) == expected(manifest)


def test_partition_pruning_on_date_and_hour(spark, dataset) -> None:  # type: ignore[no-untyped-def]
    q1 = (
        "SELECT date, COUNT(*), COUNT(DISTINCT ip_address), AVG(response_size) "
        "FROM nginx_logs.access_logs WHERE date >= '2025-03-02' GROUP BY date"
    )
    q2 = (
        "SELECT COUNT(*) FROM nginx_logs.access_logs "
        "WHERE date = '2025-03-01' AND hour BETWEEN 10 AND 12"
    )
    for q in (q1, q2):
        plan = spark.sql(q)._jdf.queryExecution().executedPlan().toString()
        assert "BatchScan" in plan and "date" in plan.split("BatchScan", 1)[1].split("\n")[0]
    spark.sql("USE nginx_logs")
    assert spark.sql(q2.replace("nginx_logs.", "")).collect()[0][0] > 0


@pytest.mark.slow
def test_killed_run_then_rerun_is_exact(spark, lakehouse_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
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
        env={**os.environ, **lakehouse_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # kill right after the first data commit, before its ledger entry
        if line.startswith("committed data"):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    partial = counts(spark, manifest)
    assert 0 < partial["accepted"] < manifest["totals"]["valid"]
    ingest(tmp_path, lakehouse_env)
    assert counts(spark, manifest) == expected(manifest)


@pytest.mark.slow
def test_concurrent_ingests_of_different_files_both_land(
    spark, lakehouse_env, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a", tmp_path / "b"
    ma, mb = generate(a, 21), generate(b, 22)
    procs = [
        subprocess.Popen(
            [str(Path(sys.executable).parent / "logberg"), "ingest", "--input", p.as_uri()],
            env={**os.environ, **lakehouse_env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for p in (a, b)
    ]
    for p in procs:
        _, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
    assert counts(spark, ma) == expected(ma)
    assert counts(spark, mb) == expected(mb)


def test_changed_file_has_its_rows_replaced(spark, lakehouse_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    day = tmp_path / "raw" / "nginx" / "dt=2025-04-01"
    day.mkdir(parents=True)
    log = day / "live.log"
    line = (
        '9.9.9.9 - - [01/Apr/2025:10:00:{s:02d} +0000] "GET /p{s} HTTP/1.1" 200 5 "-" '
        '"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0"'
    )
    log.write_text("\n".join(line.format(s=s) for s in range(10)) + "\n")
    ingest(tmp_path, lakehouse_env)
    log.write_text("\n".join(line.format(s=s) for s in range(20, 45)) + "\n")
    r = ingest(tmp_path, lakehouse_env)
    assert "1 changed" in r.stdout
    uri = file_uris(spark, {"files": [{"uri": f"file://{log}"}]})[0]
    rows = spark.sql(
        f"SELECT url FROM nginx_logs.access_logs WHERE source_file = '{uri}'"
    ).collect()
    assert sorted(r.url for r in rows) == sorted(f"/p{s}" for s in range(20, 45))


def test_a_new_file_inside_a_compacted_files_bounds_lands_exactly(  # type: ignore[no-untyped-def]
    spark, lakehouse_env, tmp_path: Path
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
    ingest(tmp_path, lakehouse_env)
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
    ingest(tmp_path, lakehouse_env)
    got = spark.sql(
        "SELECT source_file, COUNT(*) AS n FROM nginx_logs.access_logs "
        f"WHERE source_file IN ({in_list([*outer, inner])}) GROUP BY 1"
    ).collect()
    assert {r.source_file: r.n for r in got} == {outer[0]: 5, outer[1]: 7, inner: 3}
