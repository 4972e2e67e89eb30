"""The local Spark Connect server: a warm Spark that every command of this home can use.

`logberg local up` starts it beside the metastore, from the pinned PySpark's own jars
(`spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`; the pip
package has no `sbin/start-connect-server.sh`), with the same jars, class archive, catalog
and S3 settings as an in-process session of this home. It listens on 127.0.0.1 only, and
clients authenticate with a token generated per home (a 0600 file under run/, handed to
the server through its environment, so it is in no Spark conf, log or event log).

Files under $LOGBERG_HOME: run/spark-connect.pid, run/spark-connect.json (port and the
lakehouse it serves, so a client with other settings is told, not served the wrong
tables), run/spark-connect.token and logs/spark-connect.log.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyspark

from logberg.errors import ConfigError, ServiceError
from logberg.lakehouse.connect import ConnectServer
from logberg.lakehouse.session import JIT_OPTIONS, REDACTION, SERVER_JIT_OPTIONS, session_conf
from logberg_platform.local_settings import LocalSettings, int_env
from logberg_platform.supervisor import Supervised, clean_env, port_open, wait_for_port

if TYPE_CHECKING:
    from logberg.lakehouse.session import LakehouseConfig, SparkRuntime

PORT_ENV = "LOGBERG_CONNECT_PORT"
DEFAULT_PORT = 15002
MEMORY_ENV = "LOGBERG_CONNECT_MEMORY"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0
# What a client's settings must agree on with the server's (setting, field).
SHARED = (
    ("LOGBERG_METASTORE_URI", "metastore_uri"),
    ("LOGBERG_WAREHOUSE", "warehouse"),
    ("LOGBERG_S3_ENDPOINT", "s3_endpoint"),
)


@dataclass(frozen=True)
class Served:
    """What a running server serves (run/spark-connect.json)."""

    port: int
    metastore_uri: str
    warehouse: str
    s3_endpoint: str | None
    # Started with no plan cache (argv), so a job command may take up a session an earlier
    # one left (connect_pool). A server an older logberg started, whose state file lacks
    # this, gives every command a session of its own instead.
    shared_sessions: bool = False


def port(s: LocalSettings) -> int:
    return int_env(PORT_ENV, DEFAULT_PORT)


def service(s: LocalSettings) -> Supervised:
    return Supervised(
        name="spark-connect",
        pid_file=s.run / "spark-connect.pid",
        log_file=s.logs / "spark-connect.log",
        marker=f"-Dlogberg.connect.home={s.home}",
        program="java",
    )


def state_file(s: LocalSettings) -> Path:
    return s.run / "spark-connect.json"


def sessions_dir(s: LocalSettings) -> Path:
    """The server's session slots (`logberg.lakehouse.connect_pool`)."""
    return s.run / "spark-connect-sessions"


def token_file(s: LocalSettings) -> Path:
    return s.run / "spark-connect.token"


def token(s: LocalSettings) -> str:
    """This home's client token, created on first use (0600)."""
    path = token_file(s)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def served(s: LocalSettings) -> Served | None:
    """What the running server serves; None when no server of this home runs."""
    if service(s).pid() is None:
        return None
    try:
        return Served(**json.loads(state_file(s).read_text()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def argv(s: LocalSettings, cfg: LakehouseConfig, runtime: SparkRuntime, at: int) -> list[str]:
    """spark-submit of the server with this home's session settings."""
    # Without REDACTION: no Kafka read runs on this server (ingest --from runs in-process),
    # and with the key in the server's conf a taken-up session's conf.get failed
    # (SQL_CONF_NOT_FOUND: test_concurrency.py) or lost it (test_warm_sessions.py).
    conf = {k: v for k, v in session_conf(cfg, runtime).items() if k not in REDACTION}
    class_path = conf.pop("spark.driver.extraClassPath", "")
    memory = conf.pop("spark.driver.memory", "2g")
    memory = os.environ.get(MEMORY_ENV) or memory
    # A command's JVM raises the C2 thresholds (start-up code stays in C1); the server
    # outlives its start-up, and its steady state is what every command gets.
    java_options = conf.pop("spark.driver.extraJavaOptions", "").replace(
        JIT_OPTIONS, SERVER_JIT_OPTIONS
    )
    conf.update(
        {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(at),
            "spark.connect.grpc.port.maxRetries": "0",  # the port given, or fail
            # Clients share the server's cores: a short query is not queued behind a job.
            "spark.scheduler.mode": "FAIR",
            # Compiled query code, per session class loader (Spark's default keeps 100: less
            # than one analytics run compiles). Job commands reuse sessions (connect_pool),
            # so the code of a run is there for the next.
            "spark.sql.codegen.cache.maxEntries": "2000",
            # No per-session plan cache. It keys a relation's resolved plan by the relation
            # as the client sent it, plan ids included, and PySpark numbers the plans of
            # each process from 0: a job command that takes up a session an earlier command
            # left (connect_pool) sends the same relations with the same ids, and was given
            # the earlier command's resolved plans. A file source's plan holds its listing,
            # so `ingest` saw the landing as an earlier command had listed it (#53). With no
            # cache every relation is resolved when sent, as in a process of its own.
            "spark.connect.session.planCache.maxSize": "0",
        }
    )
    out = [
        str(Path(pyspark.__file__).parent / "bin" / "spark-submit"),
        "--master",
        runtime.master or "local[*]",
        "--name",
        "logberg-connect",
        "--class",
        SERVER_CLASS,
        "--driver-memory",
        memory,
        "--driver-java-options",
        f"{java_options} -Dlogberg.connect.home={s.home}".strip(),
    ]
    if class_path:
        out += ["--driver-class-path", class_path]
    for key, value in conf.items():
        out += ["--conf", f"{key}={value}"]
    return [*out, "spark-internal"]


def check_port(s: LocalSettings) -> int:
    """LOGBERG_CONNECT_PORT, a port number that this home's server holds or nothing does."""
    at = port(s)
    if served(s) is None and port_open(at):
        raise ConfigError(
            f"{PORT_ENV}={at}: something else listens on 127.0.0.1:{at}; choose a free port"
        )
    return at


def start(s: LocalSettings, cfg: LakehouseConfig, runtime: SparkRuntime) -> ConnectServer:
    """Start the server unless it runs; return once a real query answers."""
    current = served(s)
    if current is not None:
        return client(s, current)
    at = check_port(s)
    svc = service(s)
    svc.stop()  # a stale pid file
    # S3 as an in-process session of this environment reaches it: the AWS_* settings of the
    # environment `up` runs in (the server's, for every client; a client with other
    # credentials runs in-process), then this home's own S3 server's keys.
    aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    env = {**clean_env(), **aws, **runtime.env, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token(s)}
    # Streaming's foreachBatch runs in a Python worker of the server: this environment's.
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    workdir = Path(runtime.workdir) if runtime.workdir else s.run
    workdir.mkdir(parents=True, exist_ok=True)
    proc = svc.start(argv(s, cfg, runtime, at), env=env, cwd=workdir)
    wait_for_port(svc, proc, at, START_TIMEOUT_S)
    state = Served(at, cfg.metastore_uri, cfg.warehouse, cfg.s3_endpoint, shared_sessions=True)
    state_file(s).write_text(json.dumps(asdict(state)))
    server = client(s, state)
    ready(svc, server)
    return server


def ready(svc: Supervised, server: ConnectServer) -> None:
    """A real query answers: the session reaches the catalog and the metastore."""
    from logberg.lakehouse.connect import remote_session

    deadline = time.monotonic() + 60
    while True:
        try:
            spark = remote_session(server, whole_process=False)
            spark.sql("SHOW NAMESPACES").collect()
            spark.stop()
            return
        except (ServiceError, ConfigError):
            if svc.pid() is None or time.monotonic() > deadline:
                raise ServiceError(
                    f"{server.where()} did not answer a query:\n{svc.log_tail()}"
                ) from None
        time.sleep(0.5)


def client(s: LocalSettings, state: Served) -> ConnectServer:
    return ConnectServer(
        host="localhost",
        port=state.port,
        token=token(s),
        log=str(service(s).log_file),
        token_source=str(token_file(s)),
        described="the local Spark Connect server",
        sessions=str(sessions_dir(s)) if state.shared_sessions else None,
    )


def check_same(cfg: LakehouseConfig, state: Served) -> None:
    """The client's lakehouse is the server's, or an error naming the setting."""
    for setting, name in SHARED:
        mine, its = getattr(cfg, name), getattr(state, name)
        if (mine or None) != (its or None):
            raise ConfigError(
                f"{setting}={mine or '(unset)'}: the running Spark Connect server serves "
                f"{its or '(none)'}; restart it with these settings (`logberg local down`, "
                f"then `logberg local up`), or set LOGBERG_SPARK_MODE=in-process"
            )


def stop(s: LocalSettings) -> bool:
    was = service(s).stop()
    state_file(s).unlink(missing_ok=True)
    shutil.rmtree(sessions_dir(s), ignore_errors=True)
    return was
