"""The local Hive Metastore: a real thrift service on embedded Derby or PostgreSQL.

The schema is created with Hive's schematool (never DataNucleus auto-create), so the
transaction/lock tables that Iceberg's HMS commit locks need exist.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

from logberg.errors import ConfigError, ServiceError
from logberg.lakehouse.hadoop import s3a_properties
from logberg.versions import pins
from logberg_platform import setup_artifacts
from logberg_platform.local_settings import LocalSettings, java_home, java_options
from logberg_platform.supervisor import Supervised, port_open, wait_for_port

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool"
EXPRESSION_PROXY = "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy"
PASSWORD_ENV = "LOGBERG_METASTORE_DB_PASSWORD"
JVM_OPTS = [
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-Djava.net.preferIPv4Stack=true",
    # The standalone metastore has no hive-exec: replace the defaults that live there.
    # (Given as system properties: HiveMetaStore's start-up reads these before the site file.)
    f"-Dmetastore.expression.proxy={EXPRESSION_PROXY}",
    "-Dmetastore.task.threads.always=org.apache.hadoop.hive.metastore.events.EventCleanerTask",
]


def service(s: LocalSettings) -> Supervised:
    return Supervised(
        name="hive-metastore",
        pid_file=s.run / "metastore.pid",
        log_file=s.logs / "metastore.log",
        marker=f"-Dlogberg.home={s.home}",
    )


def _site_xml(props: dict[str, str]) -> str:
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def site_properties(s: LocalSettings, warehouse: str, s3_endpoint: str | None) -> dict[str, str]:
    db = s.metastore_db
    if db.kind == "derby":
        conn = {
            "javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={s.metastore_dir / 'metastore_db'};create=true"
            ),
            "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        }
    else:
        conn = {
            "javax.jdo.option.ConnectionURL": (
                f"jdbc:postgresql://{db.host}:{db.port}/{db.database}"
            ),
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": db.user,
        }
    props = {
        **conn,
        "metastore.thrift.port": str(s.metastore_port),
        "metastore.warehouse.dir": warehouse,
        "metastore.schema.verification": "true",
        "datanucleus.schema.autoCreateAll": "false",
        "metastore.expression.proxy": EXPRESSION_PROXY,
        # Spark and Iceberg clients are not the metastore's superuser.
        "metastore.event.db.notification.api.auth": "false",
        "hive.metastore.event.db.notification.api.auth": "false",
    }
    if s3_endpoint:
        props.update(s3a_properties(s3_endpoint, True, os.environ.get("AWS_REGION", "us-east-1")))
    return props


LOG4J2 = """\
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.dn.name = DataNucleus
logger.dn.level = WARN
logger.dn2.name = org.datanucleus
logger.dn2.level = WARN
"""


def write_conf(s: LocalSettings, warehouse: str, s3_endpoint: str | None) -> Path:
    conf = s.metastore_dir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    props = site_properties(s, warehouse, s3_endpoint)
    password = os.environ.get(PASSWORD_ENV)
    if password and s.metastore_db.kind == "postgres":
        props["javax.jdo.option.ConnectionPassword"] = password
    site = conf / "metastore-site.xml"
    # The file may hold the DB password: create it private before writing.
    fd = os.open(site, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(_site_xml(props))
    (conf / "metastore-log4j2.properties").write_text(LOG4J2)
    return conf


def _java_cmd(s: LocalSettings, conf: Path, main: str, args: list[str]) -> list[str]:
    """The JVM of `main` on the metastore's jars. The conf folder is not on the class path
    (METASTORE_CONF_DIR names it: `_env`), so that the JVM can map the class archive `make
    setup` records (JDK 17 maps one only over a class path without a non-empty folder); the
    metastore itself writes it when LOGBERG_METASTORE_CDS_DUMP names a file (setup)."""
    cp = setup_artifacts.metastore_classpath(s.tools)
    dump = os.environ.get(setup_artifacts.METASTORE_CDS_DUMP_ENV) if main == MAIN_CLASS else None
    return [
        str(java_home() / "bin" / "java"),
        *JVM_OPTS,
        *setup_artifacts.cds_java_options(setup_artifacts.metastore_cds_archive(s), dump),
        *java_options(),
        f"-Dlogberg.home={s.home}",
        f"-Dderby.system.home={s.metastore_dir}",
        f"-Dlog4j.configurationFile={conf / 'metastore-log4j2.properties'}",
        "-cp",
        ":".join(map(str, cp)),
        main,
        *args,
    ]


def _env(s: LocalSettings, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "JAVA_HOME": str(java_home()),
            "METASTORE_HOME": str(setup_artifacts.hive_home(s.tools)),
            # Where its metastore-site.xml is (write_conf): read before METASTORE_HOME's.
            "METASTORE_CONF_DIR": str(s.metastore_dir / "conf"),
            "HADOOP_USER_NAME": env.get("HADOOP_USER_NAME", env.get("USER", "logberg")),
        }
    )
    env.pop(PASSWORD_ENV, None)
    env.update(extra or {})
    return env


def _check_db_reachable(s: LocalSettings) -> None:
    db = s.metastore_db
    if db.kind == "postgres" and not port_open(db.port, db.host, timeout=2.0):
        raise ConfigError(
            f"LOGBERG_METASTORE_DB: PostgreSQL at {db.host}:{db.port} does not answer"
        )


def init_schema(s: LocalSettings, conf: Path) -> str:
    """Create or upgrade the metastore schema with schematool; idempotent."""
    dbtype = "derby" if s.metastore_db.kind == "derby" else "postgres"
    want = ".".join(pins().hive.split(".")[:2]) + ".0"

    def tool(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            _java_cmd(s, conf, SCHEMA_TOOL, ["-dbType", dbtype, *args]),
            env=_env(s),
            cwd=s.metastore_dir,
            capture_output=True,
            text=True,
            timeout=600,
        )

    info = tool("-info")
    found = re.search(r"Metastore schema version:\s*(\S+)", info.stdout + info.stderr)
    if info.returncode == 0 and found and found.group(1) == want:
        return "current"
    action = "-upgradeSchema" if info.returncode == 0 and found else "-initSchema"
    done = tool(action)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        raise ServiceError(
            f"schematool {action} failed for {s.metastore_db.label} (LOGBERG_METASTORE_DB):\n{tail}"
        )
    return "initialised" if action == "-initSchema" else "upgraded"


def start(
    s: LocalSettings,
    warehouse: str,
    s3_env: dict[str, str] | None = None,
    s3_endpoint: str | None = None,
    timeout: float = 120.0,
) -> str:
    """Start the metastore if it is not running; returns its thrift URI."""
    svc = service(s)
    if svc.pid() is not None:
        return s.metastore_uri
    if port_open(s.metastore_port):
        raise ConfigError(
            f"LOGBERG_METASTORE_PORT={s.metastore_port} is already in use by another process"
        )
    _check_db_reachable(s)
    conf = write_conf(s, warehouse, s3_endpoint)
    init_schema(s, conf)
    proc = svc.start(
        _java_cmd(s, conf, MAIN_CLASS, ["-p", str(s.metastore_port)]),
        env=_env(s, s3_env),
        cwd=s.metastore_dir,
    )
    wait_for_port(svc, proc, s.metastore_port, timeout)
    return s.metastore_uri
