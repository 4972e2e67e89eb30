"""The bench's private LOGBERG_HOME (bench/data/home) with its own metastore on a free port,
a helper SparkSession for resets and count checks, and `logberg` child processes.

Every measured command gets LOGBERG_SPARK_MODE explicitly: `in-process` (the cold figures:
each command starts its own Spark) unless a section asks for `connect` (the warm figures:
the command is a client of this home's Spark Connect server, which only the warm sections
start, on a free port, and stop)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench import measure
from bench.config import DATA
from logberg_platform.supervisor import free_port

REPO = Path(__file__).resolve().parents[1]
LOGBERG = str(Path(sys.executable).parent / "logberg")
# LOGBERG_* variables a caller may set to tune the measured jobs; every other LOGBERG_*
# variable is dropped so the bench never touches another home, metastore or warehouse.
PASS_THROUGH = {
    "LOGBERG_TOOLS",
    "LOGBERG_SPARK_MASTER",
    "LOGBERG_DRIVER_MEMORY",
    "LOGBERG_SHUFFLE_PARTITIONS",
    "LOGBERG_CONNECT_MEMORY",
}
IN_PROCESS = "in-process"
CONNECT = "connect"
# What a command logs (stderr) about the Spark it ran on (logberg.lakehouse.connect).
MODE_LOG = {IN_PROCESS: "spark: in-process", CONNECT: ", the Spark Connect server (pid "}

INGEST_RE = re.compile(
    r"ingest \S+: files=(?P<files>\d+) .*?lines_read=(?P<lines>\d+) accepted=(?P<accepted>\d+) "
    r"rejected=(?P<rejected>\d+) .*?days=(?P<days>\d+) .*?duration=(?P<duration>[\d.]+)s"
)
STEPS_RE = re.compile(r" steps=(\S+)")
ANALYTICS_RE = re.compile(
    r"analytics: days=(?P<days>\d+) weeks=(?P<weeks>\d+) .*?duration=(?P<duration>[\d.]+)s"
)
REPORT_RE = re.compile(
    r"report: wrote \S+ \((?P<bytes>\d+) bytes; days=(?P<days>\d+) weeks=(?P<weeks>\d+)\) "
    r"duration=(?P<duration>[\d.]+)s"
)


def _steps(text: str) -> dict[str, float]:
    steps = STEPS_RE.search(text)
    items = steps.group(1).split(",") if steps else []
    return {name: float(sec) for name, _, sec in (i.partition(":") for i in items)}


def ingest_summary(stdout: str) -> dict[str, float]:
    """The figures of `logberg ingest`'s summary line (steps as step_<name>)."""
    m = INGEST_RE.search(stdout)
    if not m:
        raise RuntimeError(f"logberg printed no ingest summary line:\n{stdout[-2000:]}")
    out = {k: float(v) for k, v in m.groupdict().items()}
    line = stdout[m.start() :].split("\n", 1)[0]
    return out | {f"step_{k}": v for k, v in _steps(line).items()}


def analytics_summary(stdout: str) -> dict[str, Any]:
    """The figures of `logberg analytics`' summary line, and its steps."""
    m = ANALYTICS_RE.search(stdout)
    if not m:
        raise RuntimeError(f"logberg printed no analytics summary line:\n{stdout[-2000:]}")
    out: dict[str, Any] = {k: float(v) for k, v in m.groupdict().items()}
    return out | {"steps": _steps(stdout[m.start() :])}


class Lakehouse:
    def __init__(self, home: Path | None = None) -> None:
        self.home = (home or DATA / "home").resolve()
        self.port = free_port()
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith("LOGBERG_") or k in PASS_THROUGH
        }
        self.connect_port = free_port()
        self.env.update(
            {
                "LOGBERG_HOME": str(self.home),
                "LOGBERG_METASTORE_PORT": str(self.port),
                "LOGBERG_CONNECT_PORT": str(self.connect_port),
                "LOGBERG_SPARK_MODE": IN_PROCESS,
            }
        )
        self._spark: Any = None
        self.settings: Any = None

    # ---- lifecycle --------------------------------------------------------------------

    def up(self) -> float:
        """Start the metastore, without the Spark Connect server (after stopping what a
        crashed run left); returns seconds."""
        for k in [k for k in os.environ if k.startswith("LOGBERG_") and k not in PASS_THROUGH]:
            del os.environ[k]
        os.environ.update(self.env)
        from logberg_platform import local
        from logberg_platform.local_settings import LocalSettings

        self.settings = LocalSettings.from_env()
        local.down(self.settings)  # only what runs under this home, by its pid file
        t0 = time.perf_counter()
        local.up(self.settings, with_connect=False)
        return time.perf_counter() - t0

    def connect_up(self) -> float:
        """Start this home's Spark Connect server (ready: a real query answered); seconds."""
        from logberg_platform import connect_server, local

        cfg = local.lakehouse_config(self.settings)
        t0 = time.perf_counter()
        connect_server.start(self.settings, cfg, local.spark_runtime(self.settings, cfg))
        return time.perf_counter() - t0

    def connect_pid(self) -> int | None:
        from logberg_platform import connect_server

        return connect_server.service(self.settings).pid()

    def connect_down(self) -> dict[str, float | None]:
        """Stop the server; first its peak memory (VmHWM over its process tree) and RSS."""
        from logberg_platform import connect_server

        pid = self.connect_pid()
        none: dict[str, float | None] = {"rss_mb": None, "hwm_mb": None}
        mem = measure.tree_memory_mb(pid) if pid else none
        connect_server.stop(self.settings)
        return mem

    def down(self) -> None:
        """Stop the helper session, the Spark Connect server (if a section left it) and the
        metastore."""
        from logberg_platform import local

        if self._spark is not None:
            try:
                self._spark.stop()
            finally:
                self._spark = None
        if self.settings is not None:
            local.down(self.settings)

    @property
    def spark(self) -> Any:
        """The helper session (started on first use): resets and checks, never timed."""
        if self._spark is None:
            from logberg_platform.local import session

            self._spark = session("logberg-bench-helper")
        return self._spark

    # ---- state ----------------------------------------------------------------------

    def reset(self) -> None:
        """An empty warehouse: drop (PURGE) every table of nginx_logs and the namespace."""
        from logberg.lakehouse.schema import DATABASE
        from logberg.lakehouse.session import CATALOG

        spark = self.spark
        if spark.sql(f"SHOW NAMESPACES IN {CATALOG} LIKE '{DATABASE}'").count():
            for row in spark.sql(f"SHOW TABLES IN {CATALOG}.{DATABASE}").collect():
                spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.{DATABASE}.{row.tableName} PURGE")
            spark.sql(f"DROP NAMESPACE IF EXISTS {CATALOG}.{DATABASE}")
        shutil.rmtree(self.home / "warehouse" / f"{DATABASE}.db", ignore_errors=True)

    def table_counts(self) -> dict[str, int]:
        from logberg.lakehouse.schema import ACCESS_LOGS, REJECTS

        return {
            "access_logs": int(self.spark.sql(f"SELECT count(*) FROM {ACCESS_LOGS}").first()[0]),
            "rejects": int(self.spark.sql(f"SELECT count(*) FROM {REJECTS}").first()[0]),
        }

    # ---- the measured commands --------------------------------------------------------

    def logberg(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        mode: str = IN_PROCESS,
        launcher: tuple[str, ...] = (),
    ) -> measure.ProcResult:
        """`logberg ARGS` with LOGBERG_SPARK_MODE=`mode`; `env` instead of this home's (e.g.
        another checkout's PYTHONPATH); `launcher` before it (`taskset -c 0`: one core)."""
        return measure.run(
            [*launcher, LOGBERG, *args],
            env={**(env or self.env), "LOGBERG_SPARK_MODE": mode},
            cwd=REPO,
        )

    def spark_command(self, what: str, *args: str, mode: str = IN_PROCESS) -> measure.ProcResult:
        """A command that must succeed on the Spark `mode` names (checked in its log)."""
        r = self.logberg(*args, mode=mode).check(what)
        if MODE_LOG[mode] not in r.stderr:
            tail = "\n".join(r.stderr.splitlines()[-10:])
            raise RuntimeError(f"{what}: no sign in its log that it ran {mode}:\n{tail}")
        return r

    def ingest(
        self, uri: str, *extra: str, env: dict[str, str] | None = None, mode: str = IN_PROCESS
    ) -> tuple[measure.ProcResult, dict[str, float]]:
        if env is not None:  # another checkout's code: it may not log its mode
            r = self.logberg("ingest", "--input", uri, *extra, env=env).check("logberg ingest")
        else:
            r = self.spark_command("logberg ingest", "ingest", "--input", uri, *extra, mode=mode)
        return r, ingest_summary(r.stdout)

    def analytics(self, mode: str = IN_PROCESS) -> tuple[measure.ProcResult, dict[str, Any]]:
        r = self.spark_command("logberg analytics", "analytics", mode=mode)
        return r, analytics_summary(r.stdout)

    def run(
        self, uri: str, mode: str = IN_PROCESS
    ) -> tuple[measure.ProcResult, dict[str, float], dict[str, Any]]:
        """`logberg run`: ingest, then analytics, in one process and session."""
        r = self.spark_command("logberg run", "run", "--input", uri, mode=mode)
        return r, ingest_summary(r.stdout), analytics_summary(r.stdout)

    def report(self, output: Path) -> tuple[measure.ProcResult, dict[str, float]]:
        r = self.logberg("report", "--output", str(output)).check("logberg report")
        m = REPORT_RE.search(r.stdout)
        if not m:
            raise RuntimeError(f"logberg report printed no summary line:\n{r.stdout[-2000:]}")
        return r, {k: float(v) for k, v in m.groupdict().items()}

    def has_follow(self) -> bool:
        r = self.logberg("ingest", "--help")
        return r.returncode == 0 and "--follow" in r.stdout
