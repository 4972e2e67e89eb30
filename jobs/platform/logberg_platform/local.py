"""The embedded default under $LOGBERG_HOME: `logberg local up | down | status`, and what a
local Spark session needs (the lakehouse's local defaults and the local Spark runtime)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logberg.errors import ConfigError
from logberg.lakehouse.connect import (
    MODE_ENV,
    ConnectServer,
    SparkMode,
    remote_session,
    spark_mode,
)
from logberg.lakehouse.session import JIT_OPTIONS, LakehouseConfig, SparkRuntime, build_session
from logberg_platform import (
    connect_server,
    history,
    kafka_broker,
    metastore,
    s3server,
    setup_artifacts,
)
from logberg_platform.local_settings import LocalSettings, java_home, joined_java_options
from logberg_platform.supervisor import port_open

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

    from logberg.lakehouse.kafka_admin import TopicSpec


log = logging.getLogger("logberg.spark")


@dataclass(frozen=True)
class Status:
    name: str
    running: bool
    pid: int | None
    where: str
    log: str


def _layout(s: LocalSettings) -> None:
    for d in (s.home, s.warehouse, s.landing, s.logs, s.run, s.metastore_dir):
        d.mkdir(parents=True, exist_ok=True)


def up(
    s: LocalSettings,
    with_s3: bool = False,
    with_connect: bool = True,
    with_history: bool = False,
    with_kafka: bool = False,
    topics: tuple[TopicSpec, ...] = (),
) -> list[str]:
    """Start what is not running yet; returns lines to print. `with_connect`: also the
    Spark Connect server (connect_server), once the metastore answers. `with_history`:
    also Spark's History Server over this home's event logs (history). `with_kafka`: also
    a Kafka broker (kafka_broker), and `topics` on it (made unless they exist as asked)."""
    if with_connect:
        connect_server.check_port(s)  # a wrong port fails before anything starts
    if with_history:
        history.check_port(s)
    if with_kafka:
        kafka_broker.port(s)
    history.event_log_enabled()  # so does a wrong LOGBERG_EVENT_LOG
    _layout(s)
    lines = []
    s3_env = None
    # Another S3-compatible endpoint (LOGBERG_S3_ENDPOINT): the metastore reaches the
    # warehouse there, with the AWS_* credentials of this environment.
    s3_endpoint = os.environ.get("LOGBERG_S3_ENDPOINT") or None
    if with_s3 or s3server.is_running(s):
        s3_endpoint = s3server.start(s)
        s3_env = s3server.client_env(s)
        lines.append(f"s3        {s3_endpoint}  bucket s3://{s3server.DEFAULT_BUCKET}")
    warehouse = os.environ.get("LOGBERG_WAREHOUSE") or s.warehouse.as_uri()
    uri = metastore.start(s, warehouse, s3_env=s3_env, s3_endpoint=s3_endpoint)
    lines.insert(0, f"metastore {uri}  ({s.metastore_db.label})")
    lines.append(f"warehouse {warehouse}")
    if with_connect:
        cfg = lakehouse_config(s)
        server = connect_server.start(s, cfg, spark_runtime(s, cfg))
        lines.append(f"spark     {server.url}  (Spark Connect, warm)")
    if with_history:
        lines.append(f"history   {history.start(s).url}  (Spark History Server)")
    if with_kafka:
        bootstrap = kafka_broker.start(s).bootstrap
        lines.append(f"kafka     {bootstrap}  (Kafka broker, KRaft)")
        lines += [kafka_broker.make_topic(bootstrap, spec) for spec in topics]
    lines.append(f"home      {s.home}")
    return lines


def down(s: LocalSettings) -> list[str]:
    """Stop only what `up` started under this home."""
    was = connect_server.stop(s)  # first: it is the metastore's and S3 server's client
    lines = [f"{connect_server.service(s).name}: {'stopped' if was else 'was not running'}"]
    for svc in (history.service(s), metastore.service(s), s3server.service(s)):
        lines.append(f"{svc.name}: {'stopped' if svc.stop() else 'was not running'}")
    was = kafka_broker.stop(s)
    lines.append(f"{kafka_broker.service(s).name}: {'stopped' if was else 'was not running'}")
    return lines


def status(s: LocalSettings) -> list[Status]:
    out = []
    ms = metastore.service(s)
    pid = ms.pid()
    out.append(
        Status(
            ms.name,
            pid is not None and port_open(s.metastore_port),
            pid,
            f"{s.metastore_uri} ({s.metastore_db.label})",
            str(ms.log_file),
        )
    )
    s3 = s3server.service(s)
    pid = s3.pid()
    out.append(Status(s3.name, pid is not None, pid, s.s3_endpoint, str(s3.log_file)))
    sc = connect_server.service(s)
    state = connect_server.served(s)
    pid = sc.pid()
    where = f"sc://localhost:{state.port}" if state else f"port {connect_server.port(s)}"
    running = state is not None and port_open(state.port)
    out.append(Status(sc.name, running, pid, where, str(sc.log_file)))
    hs = history.service(s)
    found = history.running(s)
    where = found.url if found else f"port {history.port()}"
    running = found is not None and port_open(found.port)
    out.append(Status(hs.name, running, hs.pid(), where, str(hs.log_file)))
    kb = kafka_broker.service(s)
    broker = kafka_broker.served(s)
    where = broker.bootstrap if broker else f"port {kafka_broker.port(s)}"
    running = broker is not None and port_open(broker.port)
    out.append(Status(kb.name, running, kb.pid(), where, str(kb.log_file)))
    return out


# ---- local Spark sessions -----------------------------------------------------------------


def lakehouse_defaults(s: LocalSettings) -> LakehouseConfig:
    """This home's metastore and warehouse; its S3 server when that runs."""
    return LakehouseConfig(
        metastore_uri=s.metastore_uri,
        warehouse=s.warehouse.as_uri(),
        s3_endpoint=s.s3_endpoint if s3server.is_running(s) else None,
    )


def lakehouse_config(s: LocalSettings) -> LakehouseConfig:
    """The LOGBERG_* settings over this home's defaults."""
    return LakehouseConfig.from_env(lakehouse_defaults(s))


LAUNCHER_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_runtime(s: LocalSettings, cfg: LakehouseConfig) -> SparkRuntime:
    """Local mode sized for a laptop, with the jars and class archive `make setup` made."""
    shuffle = os.environ.get("LOGBERG_SHUFFLE_PARTITIONS", "4")
    env = {
        "JAVA_HOME": os.environ.get("JAVA_HOME") or str(java_home()),  # fails fast if none
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        # spark-submit first runs a JVM that only prints the real command line: a short
        # JVM, for which C1 and the serial collector are cheapest (~0.5 s of CPU a start).
        "SPARK_LAUNCHER_OPTS": os.environ.get("SPARK_LAUNCHER_OPTS", LAUNCHER_OPTIONS),
    }
    if cfg.s3_endpoint == s.s3_endpoint:
        env.update(s3server.client_env(s))  # the local server only knows its own keys
    spark_dir = s.home / "spark"
    (spark_dir / "tmp").mkdir(parents=True, exist_ok=True)
    cds = " ".join(
        setup_artifacts.cds_java_options(
            setup_artifacts.cds_archive(s), os.environ.get(setup_artifacts.CDS_DUMP_ENV)
        )
    )
    conf = {
        # On the JVM's own class path, not spark.jars: local mode then does not copy the
        # jars (the AWS SDK bundle is 600 MB) into every session's work directory.
        "spark.driver.extraClassPath": os.pathsep.join(
            map(str, setup_artifacts.spark_jars(s.tools))
        ),
        "spark.driver.memory": os.environ.get("LOGBERG_DRIVER_MEMORY", "2g"),
        "spark.driver.extraJavaOptions": " ".join(
            o
            for o in (JIT_OPTIONS, cds, f"-Dderby.system.home={spark_dir}", joined_java_options())
            if o
        ),
        # file: paths set modes through java.nio, not a `chmod` process per new folder
        # (jobs/logberg/java/dev/logberg/NioLocalFileSystem.java).
        "spark.hadoop.fs.file.impl": "dev.logberg.NioLocalFileSystem",
        "spark.sql.shuffle.partitions": shuffle,
        "spark.default.parallelism": shuffle,
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": os.environ.get("LOGBERG_SPARK_UI", "false"),
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": os.environ.get("LOGBERG_LOG_LEVEL", "WARN"),
        **history.event_log_conf(s),
    }
    return SparkRuntime(
        master=os.environ.get("LOGBERG_SPARK_MASTER") or "local[*]",
        conf=conf,
        env=env,
        hint=" (LOGBERG_METASTORE_PORT); start it with `logberg local up`",
        workdir=str(spark_dir),
    )


def session(
    app_name: str,
    s: LocalSettings | None = None,
    extra: Mapping[str, str] | None = None,
    validate: bool = True,
) -> SparkSession:
    """An in-process SparkSession over this home's lakehouse (tests, the bench)."""
    s = s or LocalSettings.from_env()
    cfg = lakehouse_config(s)
    return build_session(app_name, cfg, spark_runtime(s, cfg), extra, validate)


def chosen_server(s: LocalSettings) -> connect_server.Served | None:
    """The Spark Connect server a command of this home runs on, by LOGBERG_SPARK_MODE;
    None: in-process. `connect` without a running server is an error naming the setting."""
    mode = spark_mode()
    if mode is SparkMode.IN_PROCESS:
        return None
    state = connect_server.served(s)
    if state is None and mode is SparkMode.CONNECT:
        raise ConfigError(
            f"{MODE_ENV}=connect: no Spark Connect server runs under {s.home} "
            "(LOGBERG_HOME); start it with `logberg local up`"
        )
    return state


def command_server(s: LocalSettings, in_process: str | None = None) -> ConnectServer | None:
    """The Spark Connect server a command runs on, checked, when `chosen_server` says so;
    None: in-process. `in_process`: a command (named) that runs in-process whatever server
    runs; forced Connect mode is then an error. Settings that differ from the server's are
    an error naming them; the client takes this home's S3 settings (boto3)."""
    if in_process is not None and spark_mode() is SparkMode.CONNECT:
        raise ConfigError(
            f"{MODE_ENV}=connect: {in_process} runs in-process (its micro-batch callback "
            f"keeps the stream's state in this process); unset {MODE_ENV} or set it to "
            "in-process"
        )
    state = None if in_process is not None else chosen_server(s)
    if state is None:
        return None
    cfg = lakehouse_config(s)
    connect_server.check_same(cfg, state)
    os.environ.update(spark_runtime(s, cfg).env)
    return connect_server.client(s, state)


def log_server(s: LocalSettings, server: ConnectServer) -> None:
    """Say that the command runs on the server (once it has answered)."""
    pid = connect_server.service(s).pid()
    log.info("spark: %s, the Spark Connect server (pid %s)", server.url, pid)


def command_session(
    app_name: str, s: LocalSettings | None = None, in_process: str | None = None
) -> SparkSession:
    """A command's session: on this home's Spark Connect server when `command_server`
    says so, else in-process. A server that runs but does not answer is an error naming it
    and its log, never a quiet in-process run."""
    s = s or LocalSettings.from_env()
    server = command_server(s, in_process)
    if server is None:
        spark = session(app_name, s)
        master = spark.conf.get("spark.master")
        why = f"{in_process} runs in-process" if in_process else f"{MODE_ENV}={spark_mode().value}"
        # The application id names the run in the History Server (`logberg ui`).
        app = spark.sparkContext.applicationId
        log.info("spark: in-process, %s (%s), application %s", master, why, app)
        return spark
    spark = remote_session(server, reuse=True)
    log_server(s, server)
    return spark
