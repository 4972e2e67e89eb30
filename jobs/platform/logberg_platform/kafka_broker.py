"""The local Kafka broker: Apache Kafka's own broker, one node in KRaft mode (broker and
controller in one process, no ZooKeeper), started from the pinned jars `make setup`
resolves, as the metastore is (`logberg local up --kafka`).

Its storage is formatted once under $LOGBERG_HOME/kafka/ (a cluster id of its own, kept
there); it listens on 127.0.0.1 only, the client port LOGBERG_KAFKA_PORT (default 9092)
and a controller port chosen free at each start. It is ready when a real client call
answers (the cluster's metadata, with confluent-kafka). Topics are never created by a
client's request (`auto.create.topics.enable=false`): a topic that does not exist is an
error naming it, not an empty topic made on the fly. Topics are made on purpose, by
`logberg kafka topics create` or `logberg local up --kafka --topic NAME[:PARTITIONS]`.

Files under $LOGBERG_HOME: kafka/ (the conf, the cluster id, the data), run/kafka.pid,
run/kafka.json (the port it listens on) and logs/kafka.log.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from logberg.errors import ConfigError, ServiceError
from logberg_platform import setup_artifacts
from logberg_platform.local_settings import LocalSettings, int_env, java_home, java_options
from logberg_platform.supervisor import Supervised, free_port, port_open, wait_for_port

if TYPE_CHECKING:
    from logberg.lakehouse.kafka_admin import TopicSpec

PORT_ENV = "LOGBERG_KAFKA_PORT"
DEFAULT_PORT = 9092
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
# The largest message the broker takes: log shippers send one line per message, and a
# line may be long (the rejects keep lines of up to 10 MB and more, with their bytes).
MAX_MESSAGE_BYTES = 16 << 20
START_TIMEOUT_S = 120.0
JVM_OPTS = ["-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true"]
LOG4J2 = """\
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""


@dataclass(frozen=True)
class Served:
    """Where a running broker listens (run/kafka.json)."""

    port: int
    controller_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def service(s: LocalSettings) -> Supervised:
    return Supervised(
        name="kafka",
        pid_file=s.run / "kafka.pid",
        log_file=s.logs / "kafka.log",
        marker=f"-Dlogberg.kafka.home={s.home}",
        program="java",
    )


def kafka_dir(s: LocalSettings) -> Path:
    return s.home / "kafka"


def state_file(s: LocalSettings) -> Path:
    return s.run / "kafka.json"


def port(s: LocalSettings) -> int:
    return int_env(PORT_ENV, DEFAULT_PORT)


def served(s: LocalSettings) -> Served | None:
    """Where this home's broker listens; None when it does not run."""
    if service(s).pid() is None:
        return None
    try:
        return Served(**json.loads(state_file(s).read_text()))
    except (FileNotFoundError, ValueError, TypeError):
        return None


def properties(s: LocalSettings, at: int, controller: int) -> dict[str, str]:
    """The broker's server.properties: one KRaft node, plaintext on 127.0.0.1."""
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{at},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{at}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(kafka_dir(s) / "data"),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "message.max.bytes": str(MAX_MESSAGE_BYTES),
        "replica.fetch.max.bytes": str(MAX_MESSAGE_BYTES),
        # One node: every internal topic has one replica.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }


def write_conf(s: LocalSettings, at: int, controller: int) -> Path:
    d = kafka_dir(s)
    d.mkdir(parents=True, exist_ok=True)
    conf = d / "server.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in properties(s, at, controller).items()))
    (d / "log4j2.properties").write_text(LOG4J2)
    return conf


def new_cluster_id() -> str:
    """A cluster id in Kafka's form (16 random bytes, URL-safe base64) that does not start
    with '-', as Kafka's own `random-uuid` draws them: a leading '-' reads as an option."""
    while True:
        drawn = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not drawn.startswith("-"):
            return drawn


def cluster_id(s: LocalSettings) -> str:
    """This home's cluster id, made once."""
    path = kafka_dir(s) / "cluster.id"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new_cluster_id() + "\n")
    return path.read_text().strip()


def _java(s: LocalSettings, main: str, *args: str) -> list[str]:
    cp = ":".join(map(str, setup_artifacts.kafka_broker_classpath(s.tools)))
    return [
        str(java_home() / "bin" / "java"),
        *JVM_OPTS,
        *java_options(),
        f"-Dlogberg.kafka.home={s.home}",
        f"-Dlog4j2.configurationFile={kafka_dir(s) / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={s.logs}",
        "-cp",
        cp,
        main,
        *args,
    ]


def format_storage(s: LocalSettings, conf: Path) -> bool:
    """Format the KRaft storage once (True when it was formatted now)."""
    if (kafka_dir(s) / "data" / "meta.properties").is_file():
        return False
    # `--cluster-id=ID` in one argument: a home made before ids were drawn without a
    # leading '-' may hold one, and `-t ID` takes such an id for an option.
    done = subprocess.run(
        _java(s, STORAGE_TOOL, "format", f"--cluster-id={cluster_id(s)}", "-c", str(conf)),
        env={**os.environ, "JAVA_HOME": str(java_home())},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise ServiceError(f"kafka storage format failed under {kafka_dir(s)}:\n{tail}")
    return True


def start(s: LocalSettings) -> Served:
    """Start the broker unless it runs; return once a client's metadata request answers."""
    current = served(s)
    if current is not None:
        return current
    at = port(s)
    if port_open(at):
        raise ConfigError(f"{PORT_ENV}={at}: something else listens on 127.0.0.1:{at}")
    svc = service(s)
    svc.stop()  # a stale pid file
    controller = free_port()
    conf = write_conf(s, at, controller)
    format_storage(s, conf)
    proc = svc.start(
        _java(s, MAIN_CLASS, str(conf)),
        env={**os.environ, "JAVA_HOME": str(java_home())},
        cwd=kafka_dir(s),
    )
    wait_for_port(svc, proc, at, START_TIMEOUT_S)
    state = Served(at, controller)
    state_file(s).write_text(json.dumps(asdict(state)))
    deadline = time.monotonic() + START_TIMEOUT_S
    while not answers(state.bootstrap):
        svc.alive_or_fail()
        if time.monotonic() > deadline:
            raise ServiceError(
                f"the Kafka broker at {state.bootstrap} does not answer:\n{svc.log_tail()}"
            )
        time.sleep(0.5)
    return state


def answers(bootstrap: str, timeout: float = 5.0) -> bool:
    """A metadata request to the broker answers, with a controller elected."""
    from logberg.lakehouse.kafka import cluster_answers

    return cluster_answers(bootstrap, timeout)


def make_topic(bootstrap: str, spec: TopicSpec) -> str:
    """The topic on this broker, made unless it exists as asked (`local up --topic`); the
    line to print."""
    from logberg.lakehouse.kafka import TopicUri
    from logberg.lakehouse.kafka_admin import ensure

    made, info = ensure(TopicUri(bootstrap, spec.name, spec.setting), spec)
    return (
        f"topic     {info.name}  ({len(info.partitions)} partition(s), "
        f"{'made' if made else 'exists'})"
    )


def stop(s: LocalSettings) -> bool:
    was = service(s).stop(timeout=60)
    state_file(s).unlink(missing_ok=True)
    return was
