"""Spark event logs and Spark's History Server, under $LOGBERG_HOME.

Every Spark process of a home (a command's in-process session and the Spark Connect
server) writes its event log, zstd-compressed and rolled, to $LOGBERG_HOME/spark-events
(`event_log_conf`). `logberg local up --history` starts Spark's History Server over that
folder, from the pinned PySpark's own jars (the pip package has no
`sbin/start-history-server.sh`): it listens on 127.0.0.1 only, and it is ready once its
REST API answers. `logberg ui` prints its address and the applications it lists.

Files under $LOGBERG_HOME: spark-events/ (one `eventlog_v2_<app id>` folder per
application), run/history-server.pid, run/history-server.conf, run/history-store/ (the
server's disk cache of parsed logs) and logs/history-server.log.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark

from logberg.errors import ConfigError, ServiceError
from logberg_platform.local_settings import LocalSettings, int_env, java_home, java_options
from logberg_platform.supervisor import Supervised, clean_env, port_open, wait_for_port

EVENT_LOG_ENV = "LOGBERG_EVENT_LOG"
PORT_ENV = "LOGBERG_HISTORY_PORT"
DEFAULT_PORT = 18080
SERVER_CLASS = "org.apache.spark.deploy.history.HistoryServer"
START_TIMEOUT_S = 120.0
# How often the server looks for new and grown logs: a run that just ended is listed
# within seconds (Spark's default is 10 s).
UPDATE_INTERVAL = "2s"
# A rolled file is closed at this size; the History Server reads closed files of a
# running application (the Spark Connect server's) without waiting for its end.
ROLL_SIZE = "64m"


def events_dir(s: LocalSettings) -> Path:
    return s.home / "spark-events"


def event_log_enabled() -> bool:
    """LOGBERG_EVENT_LOG: true (the default) or false."""
    raw = os.environ.get(EVENT_LOG_ENV, "true").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"{EVENT_LOG_ENV}={raw!r}: expected true or false")
    return raw == "true"


def event_log_conf(s: LocalSettings) -> dict[str, str]:
    """The Spark conf that makes a process of this home write its event log (none when
    LOGBERG_EVENT_LOG=false). Spark redacts secret-like keys in the logged properties
    (`spark.redaction.regex`); S3 keys and the Connect token reach the JVM through its
    environment, which the event log does not hold."""
    if not event_log_enabled():
        return {"spark.eventLog.enabled": "false"}
    folder = events_dir(s)
    folder.mkdir(parents=True, exist_ok=True)  # Spark fails if it is missing
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": folder.as_uri(),
        "spark.eventLog.compress": "true",
        "spark.eventLog.compression.codec": "zstd",
        "spark.eventLog.rolling.enabled": "true",
        "spark.eventLog.rolling.maxFileSize": ROLL_SIZE,
    }


def port() -> int:
    return int_env(PORT_ENV, DEFAULT_PORT)


def service(s: LocalSettings) -> Supervised:
    return Supervised(
        name="history-server",
        pid_file=s.run / "history-server.pid",
        log_file=s.logs / "history-server.log",
        marker=f"-Dlogberg.history.home={s.home}",
        program="java",
    )


def url(at: int) -> str:
    return f"http://127.0.0.1:{at}"


@dataclass(frozen=True)
class History:
    """A running History Server of this home."""

    port: int
    pid: int | None

    @property
    def url(self) -> str:
        return url(self.port)


def running(s: LocalSettings) -> History | None:
    """The running server of this home, or None. Its port is in its conf file."""
    pid = service(s).pid()
    if pid is None:
        return None
    try:
        at = int(_read_conf(s)["spark.history.ui.port"])
    except (FileNotFoundError, KeyError, ValueError):
        return None
    return History(at, pid)


def _conf_file(s: LocalSettings) -> Path:
    return s.run / "history-server.conf"


def _read_conf(s: LocalSettings) -> dict[str, str]:
    out = {}
    for line in _conf_file(s).read_text().splitlines():
        key, _, value = line.partition("=")
        out[key] = value.strip()
    return out


def server_conf(s: LocalSettings, at: int) -> dict[str, str]:
    return {
        "spark.history.fs.logDirectory": events_dir(s).as_uri(),
        "spark.history.ui.port": str(at),
        "spark.history.fs.update.interval": UPDATE_INTERVAL,
        # Parsed logs are cached on disk: a restart does not parse every log again.
        "spark.history.store.path": str(s.run / "history-store"),
        # Logs older than a week go, as the folder would otherwise only grow.
        "spark.history.fs.cleaner.enabled": "true",
        "spark.history.fs.cleaner.maxAge": "7d",
    }


def argv(s: LocalSettings) -> list[str]:
    jars = Path(pyspark.__file__).parent / "jars"
    return [
        str(java_home() / "bin" / "java"),
        "-Xmx512m",
        "-XX:+UseSerialGC",
        *java_options(),
        f"-Dlogberg.history.home={s.home}",
        "-cp",
        f"{jars}/*",
        SERVER_CLASS,
        "--properties-file",
        str(_conf_file(s)),
    ]


def check_port(s: LocalSettings) -> int:
    """LOGBERG_HISTORY_PORT, a port that this home's server holds or nothing does."""
    at = port()
    if running(s) is None and port_open(at):
        raise ConfigError(
            f"{PORT_ENV}={at}: something else listens on 127.0.0.1:{at}; choose a free port"
        )
    return at


def start(s: LocalSettings) -> History:
    """Start the server unless it runs; return once its REST API answers."""
    current = running(s)
    if current is not None:
        return current
    at = check_port(s)
    svc = service(s)
    svc.stop()  # a stale pid file
    events_dir(s).mkdir(parents=True, exist_ok=True)
    (s.run / "history-store").mkdir(parents=True, exist_ok=True)
    _conf_file(s).write_text("".join(f"{k}={v}\n" for k, v in server_conf(s, at).items()))
    # SPARK_LOCAL_IP is the address Spark's web UIs bind: localhost only.
    env = {**clean_env(), "SPARK_LOCAL_IP": "127.0.0.1", "JAVA_HOME": str(java_home())}
    proc = svc.start(argv(s), env=env, cwd=s.run)
    wait_for_port(svc, proc, at, START_TIMEOUT_S)
    found = History(at, svc.pid())
    deadline = time.monotonic() + 60
    while True:
        try:
            api(found.url, "version")
            return found
        except ServiceError:
            if svc.pid() is None or time.monotonic() > deadline:
                svc.stop()
                raise ServiceError(
                    f"{svc.name} does not answer at {found.url}/api/v1/version; "
                    f"see {svc.log_file}:\n{svc.log_tail()}"
                ) from None
        time.sleep(0.5)


def stop(s: LocalSettings) -> bool:
    return service(s).stop()


def api(base: str, path: str, timeout: float = 10.0) -> Any:
    """GET `base`/api/v1/`path`, as JSON."""
    where = f"{base}/api/v1/{path}"
    try:
        with urllib.request.urlopen(where, timeout=timeout) as r:
            return json.load(r)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ServiceError(f"the History Server at {base} did not answer {where}: {e}") from e


def applications(base: str, limit: int = 20) -> list[dict[str, Any]]:
    """The applications the server lists, newest first (running ones included)."""
    apps: list[dict[str, Any]] = api(base, f"applications?limit={limit}")
    return apps
