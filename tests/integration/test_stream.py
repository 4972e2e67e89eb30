"""`logberg ingest --follow`: files dropped while the stream runs, the stream SIGKILLed in the
middle of a micro-batch and restarted with --once; the result equals a batch ingest of the
same files, with every micro-batch accounted for exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from logberg.cli import build_parser
from logberg.cli.ingest import follow_config, ingest_config
from logberg.errors import ConfigError
from logberg.pipeline.ingest.batch import ingest
from logberg.pipeline.ingest.config import IngestConfig
from tests.conftest import REPO, run_logberg
from tests.integration.test_ingest import file_uris, generate, in_list

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]

GUARD_S = 900  # only against a hung stream; nothing asserts on time


class Lines:
    """Collects a child's stdout lines on a thread; wait() until a predicate holds."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._done = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    def wait(self, ready: Callable[[], bool], what: str) -> None:
        with self._cond:
            ok = self._cond.wait_for(lambda: ready() or self._done, timeout=GUARD_S)
            if not ok or not ready():
                raise AssertionError(f"stream never showed {what}: {self.lines[-20:]}")


def drop(files: list[Path], staging: Path, landing: Path) -> list[Path]:
    """Atomic arrival: rename into the landing prefix, keeping dt=… directories."""
    out = []
    for f in files:
        dest = landing / f.relative_to(staging)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(f, dest)
        out.append(dest)
    return out


def table_state(spark: Any, uris: list[str]) -> dict[str, Any]:
    files = in_list(uris)
    ids = {
        r.event_id
        for r in spark.sql(
            f"SELECT event_id FROM nginx_logs.access_logs WHERE source_file IN ({files})"
        ).collect()
    }
    rows = spark.sql(
        f"SELECT COUNT(*) FROM nginx_logs.access_logs WHERE source_file IN ({files})"
    ).collect()[0][0]
    rejects = {
        (r.source_file, r.line_number)
        for r in spark.sql(
            "SELECT source_file, line_number FROM nginx_logs.access_logs_rejects "
            f"WHERE source_file IN ({files})"
        ).collect()
    }
    return {"rows": rows, "event_ids": ids, "rejects": rejects}


def parse_args(argv: list[str]) -> IngestConfig:
    """`logberg ingest ARGV` as the CLI turns it into a config."""
    a = build_parser().parse_args(["ingest", *argv])
    return ingest_config(a, follow_config(a))


def test_follow_options_fail_fast() -> None:
    with pytest.raises(ConfigError, match="--trigger-seconds"):
        parse_args(["--input", "file:///tmp/x", "--trigger-seconds", "2"])
    with pytest.raises(ConfigError, match="--max-bytes-per-trigger"):
        parse_args(
            [
                "--input",
                "file:///tmp/x",
                "--follow",
                "--max-files-per-trigger",
                "1",
                "--max-bytes-per-trigger",
                "10",
            ]
        )
    cfg = parse_args(["--input", "file:///tmp/x", "--follow", "--once"])
    assert cfg.follow is not None and cfg.follow.once and cfg.follow.max_files_per_trigger


@pytest.mark.slow
def test_killed_stream_restarted_equals_batch_ingest(
    spark: Any, lakehouse_env: dict[str, str], tmp_path: Path
) -> None:
    staging, landing, ckpt = tmp_path / "staging", tmp_path / "landing", tmp_path / "ckpt"
    landing.mkdir()
    manifest = generate(
        staging,
        31,
        "--num-files",
        "6",
        "--lines-per-file",
        "150",
        "--start-date",
        "2024-03-01",
        "--end-date",
        "2024-03-02",
        "--malformed-rate",
        "0.05",
    )
    logs = sorted((staging / "raw" / "nginx").glob("dt=*/*.gz"))
    assert len(logs) == 6
    follow = ["ingest", "--follow", "--input", landing.as_uri(), "--checkpoint", ckpt.as_uri()]

    # stdout and the log (stderr) as one stream of lines
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "logberg"),
            *follow,
            "--trigger-seconds",
            "2",
            "--max-files-per-trigger",
            "1",
            "--analytics-every",
            "0",
        ],
        env={**os.environ, **lakehouse_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        out = Lines(proc.stdout)
        out.wait(lambda: out.count("streaming ingest") > 0, "its start")
        landed = drop(logs[:2], staging, landing)
        out.wait(lambda: out.count("stream batch") >= 2, "two committed batches")
        landed += drop(logs[2:], staging, landing)
        # Kill inside the third batch: its data is in, its ledger/run/batch rows are not.
        out.wait(lambda: out.count("ingest.batch: committed") >= 3, "a third data commit")
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert out.count("stream batch") == 2

    r = run_logberg(
        [*follow, "--once", "--max-files-per-trigger", "3", "--analytics-every", "2"],
        lakehouse_env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stream batch 2 committed" in r.stdout  # the killed batch, replayed

    uris = file_uris(spark, {"files": [{"uri": f"file://{p}"} for p in landed]})
    valid, malformed = manifest["totals"]["valid"], manifest["totals"]["malformed_total"]
    streamed = table_state(spark, uris)
    assert streamed["rows"] == len(streamed["event_ids"]) == valid
    assert len(streamed["rejects"]) == malformed

    # Accounting: one stream_batches row and one ingest_runs row per micro-batch.
    batches = spark.sql(
        "SELECT batch_id, run_id, files FROM nginx_logs.stream_batches "
        f"WHERE checkpoint = '{ckpt.as_uri()}' ORDER BY batch_id"
    ).collect()
    assert [b.batch_id for b in batches] == list(range(len(batches)))
    assert sum(b.files for b in batches) == 6
    run_ids = in_list([b.run_id for b in batches])
    runs = spark.sql(
        "SELECT COUNT(*) AS n, SUM(accepted) AS accepted, SUM(rejected) AS rejected, "
        f"SUM(lines_read) AS lines FROM nginx_logs.ingest_runs WHERE run_id IN ({run_ids})"
    ).collect()[0]
    assert runs.n == len(batches)
    assert (runs.accepted, runs.rejected, runs.lines) == (
        valid,
        malformed,
        manifest["totals"]["lines"],
    )
    # Analytics covered every micro-batch's ingest run.
    covered = spark.sql(
        "SELECT COUNT(DISTINCT r) FROM nginx_logs.analytics_runs "
        f"LATERAL VIEW explode(ingest_run_ids) e AS r WHERE r IN ({run_ids})"
    ).collect()[0][0]
    assert covered == len(batches)

    # A batch ingest sees the files as done (same ledger), and re-reading them all (--full)
    # produces exactly the ids already there: nothing added, nothing missing.
    assert ingest(spark, IngestConfig(inputs=(landing.as_uri(),))).total.files == 0
    full = ingest(spark, IngestConfig(inputs=(landing.as_uri(),), full=True)).total
    assert (full.files, full.accepted, full.rejected) == (6, valid, malformed)
    assert table_state(spark, uris) == streamed
