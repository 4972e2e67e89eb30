"""Spark event logs on S3 through S3A, both ends, for tests/integration/test_eks_s3_policies.py.

The writer is a Spark driver (logberg's local session, a tiny job) whose `spark.eventLog.dir`
is an s3a:// prefix: Spark checks the prefix is a directory, then writes a rolled event log
folder (eventlog_v2_<app id>/) under it, as the drivers on EKS do. The reader is Spark's own
History Server (org.apache.spark.deploy.history.HistoryServer, PySpark's jars plus the S3A
jars `make setup` fetched), run the way charts/logberg runs it: a properties file naming the
s3a:// log directory, the S3A settings, the cleaner off. Each process gets only the AWS_*
credentials it is given (one role's policy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

from logberg.lakehouse.hadoop import s3a_properties, spark_properties
from logberg_platform.local_settings import java_home
from logberg_platform.setup_artifacts import jar_dir
from tests.eks_support import minio
from tests.helpers.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"

# Runs in its own process (one JVM per driver): a job, then the application id on stdout.
WRITER = """
import sys
from logberg_platform import local
spark = local.session(
    "logberg-event-log-probe",
    extra={"spark.eventLog.enabled": "true", "spark.eventLog.dir": sys.argv[1]},
    validate=False,
)
assert spark.range(1000).selectExpr("sum(id) AS s").collect()[0].s == 499500
print(spark.sparkContext.applicationId, flush=True)
spark.stop()
"""


def write_event_log(event_log_uri: str, env: dict[str, str], timeout: float = 600) -> str:
    """Run one Spark application logging to `event_log_uri`; return its application id."""
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, event_log_uri],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"the event-log writer failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return proc.stdout.strip().splitlines()[-1]


@dataclass
class HistoryServer:
    """Spark's History Server over an s3a:// log directory, with the given credentials."""

    log_dir: str
    s3_endpoint: str
    credentials: dict[str, str]
    work: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.work / "history-server.log"

    def conf(self) -> dict[str, str]:
        return {
            "spark.history.fs.logDirectory": self.log_dir,
            "spark.history.ui.port": str(self.port),
            "spark.history.fs.update.interval": "1s",
            # As the chart's default (historyServer.cleanerMaxAge empty): it only reads.
            "spark.history.fs.cleaner.enabled": "false",
            **spark_properties(s3a_properties(self.s3_endpoint)),
        }

    def start(self) -> None:
        self.port = minio.free_port()
        self.work.mkdir(parents=True, exist_ok=True)
        conf_file = self.work / "history-server.conf"
        conf_file.write_text("".join(f"{k} {v}\n" for k, v in self.conf().items()))
        jars = [Path(pyspark.__file__).parent / "jars", jar_dir(minio.tools_dir(), "s3")]
        java = java_home() / "bin" / "java"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "JAVA_HOME": str(java_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            **self.credentials,
        }
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(java),
                    "-Xmx512m",
                    "-XX:+UseSerialGC",
                    "-cp",
                    os.pathsep.join(f"{d}/*" for d in jars),
                    SERVER_CLASS,
                    "--properties-file",
                    str(conf_file),
                ],
                env=env,
                cwd=self.work,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_tail(self, lines: int = 30) -> str:
        """The exceptions the server logged (their first lines), then its last lines."""
        if not self.log_file.exists():
            return ""
        text = self.log_file.read_text(errors="replace").splitlines()
        causes = [ln for ln in text if "Exception" in ln and not ln.startswith("\t")]
        return "\n".join([*causes[-5:], "--- log tail ---", *text[-lines:]])

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=10) as resp:
            return json.loads(resp.read())

    def wait_for_application(self, app_id: str, deadline_s: float = 240) -> dict[str, Any]:
        """The application as the server lists it, once it lists it as completed. Raises
        if the server exits first (e.g. denied the log directory) or never lists it."""
        proc = self.proc
        assert proc is not None

        def listed() -> dict[str, Any] | None:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the History Server exited ({proc.returncode}):\n{self.log_tail()}"
                )
            try:
                for app in self.api("applications"):
                    if app["id"] == app_id and all(a["completed"] for a in app["attempts"]):
                        return dict(app)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet
            return None

        what = f"the History Server to list {app_id}"
        return eventually(what, listed, deadline_s, explain=self.log_tail)
