"""What local Spark and metastore processes need from `make setup`, located, never built.

`make setup` (logberg_platform.build) resolves the pinned jars into $LOGBERG_TOOLS, compiles
logberg's Java line parser into a jar named after its sources, and records a JVM class
archive. This module only finds them, and says `run make setup` when something is missing
or stale: a job never runs Maven, javac or a training run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import logberg
from logberg.errors import ConfigError
from logberg.versions import pins
from logberg_platform.local_settings import LocalSettings, java_home

JAVA_SOURCES = Path(logberg.__file__).resolve().parent / "java"  # the runtime package ships them
PARSER_JAR_PREFIX = "logberg-parser"
CDS_DUMP_ENV = "LOGBERG_CDS_DUMP"  # set by setup for the one JVM that writes the archive
METASTORE_CDS_DUMP_ENV = "LOGBERG_METASTORE_CDS_DUMP"  # the same, for the metastore's
# A stale archive is ignored, silently (images/spark/entrypoint.sh says the same for the image).
CDS_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
SETUP_HINT = "run `make setup`"


def jar_dir(tools: Path, group: str) -> Path:
    return tools / "jars" / group


def hive_home(tools: Path) -> Path:
    return tools / f"apache-hive-metastore-{pins().hive}-bin"


def java_sources() -> list[Path]:
    found = sorted(JAVA_SOURCES.rglob("*.java"))
    if not found:
        raise ConfigError(
            f"no Java sources under {JAVA_SOURCES}: the logberg install is incomplete"
        )
    return found


def kafka_client_jars(tools: Path) -> list[Path]:
    """Kafka's client, which dev.logberg.KafkaLines is compiled against and reads topics with
    (the local "kafka" jars, beside Spark's Kafka source)."""
    found = sorted(jar_dir(tools, "kafka").glob("kafka-clients-*.jar"))
    if not found:
        raise ConfigError(
            f"no kafka-clients jar under {jar_dir(tools, 'kafka')} (LOGBERG_TOOLS): {SETUP_HINT}"
        )
    return found


def java_resources() -> list[Path]:
    """Data files the jar carries beside the classes (e.g. dev/logberg/agents.rules)."""
    return sorted(p for p in JAVA_SOURCES.rglob("*") if p.is_file() and p.suffix == ".rules")


def parser_fingerprint(spark_version: str) -> str:
    """Names the parser jar after the sources and the Spark it was compiled against."""
    h = hashlib.sha256(spark_version.encode())
    for src in java_sources() + java_resources():
        h.update(src.relative_to(JAVA_SOURCES).as_posix().encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:12]


def parser_jar(tools: Path) -> Path:
    """Where the parser jar for this PySpark and these sources is (it may not exist)."""
    import pyspark

    name = f"{PARSER_JAR_PREFIX}-{parser_fingerprint(pyspark.__version__)}.jar"
    return jar_dir(tools, "logberg") / name


def agent_jars(tools: Path) -> list[Path]:
    """ua-parser's JVM port, which logberg's jar is compiled against and calls."""
    found = sorted(jar_dir(tools, "agents").glob("*.jar"))
    if not found:
        raise ConfigError(
            f"no ua-parser jar under {jar_dir(tools, 'agents')} (LOGBERG_TOOLS): {SETUP_HINT}"
        )
    return found


def spark_jars(tools: Path) -> list[Path]:
    """Jars a local Spark session adds to PySpark's own: Iceberg, S3A, Spark's Kafka source,
    ua-parser, logberg's parser."""
    found = [
        j for group in ("spark", "s3", "kafka") for j in sorted(jar_dir(tools, group).glob("*.jar"))
    ]
    if not found:
        raise ConfigError(
            f"no Iceberg/S3A jars under {tools / 'jars'} (LOGBERG_TOOLS): {SETUP_HINT}"
        )
    found += agent_jars(tools)
    parser = parser_jar(tools)
    if not parser.is_file():
        raise ConfigError(
            f"no line-parser jar for these sources at {parser} (LOGBERG_TOOLS): {SETUP_HINT} "
            "(it compiles jobs/logberg/java)"
        )
    return [*found, parser]


def kafka_broker_classpath(tools: Path) -> list[Path]:
    """The Kafka broker's jars (`logberg local up --kafka`), its own class path."""
    found = sorted(jar_dir(tools, "kafka-broker").glob("*.jar"))
    if not any(j.name.startswith("kafka_2.13-") for j in found):
        raise ConfigError(
            f"no Kafka broker under {jar_dir(tools, 'kafka-broker')} (LOGBERG_TOOLS): {SETUP_HINT}"
        )
    return found


def kubectl_path(tools: Path) -> Path:
    """Where `make tools` puts kubectl (build.tools.ensure_helm_kubectl; the kind node image's
    kubectl too)."""
    return tools / "bin" / "kubectl"


def metastore_classpath(tools: Path) -> list[Path]:
    home = hive_home(tools)
    if not (home / "lib").is_dir():
        raise ConfigError(f"no Hive metastore under {home} (LOGBERG_TOOLS): {SETUP_HINT}")
    cp: list[Path] = []
    # Hadoop first: its Guava (27+) must shadow Hive's bundled Guava 19.
    # Hive brings log4j2; Hadoop's reload4j binding would hijack SLF4J.
    for group in ("hadoop", "s3", "jdbc"):
        cp += sorted(
            j
            for j in jar_dir(tools, group).glob("*.jar")
            if not j.name.startswith(("slf4j-reload4j", "reload4j"))
        )
    cp += sorted(j for j in (home / "lib").glob("*.jar") if not j.name.startswith("guava-"))
    return cp


def _class_archive(settings: LocalSettings, name: str, class_path: list[str]) -> Path:
    """Where the class archive of `name`'s JVMs for this JDK and class path lives (it may
    not exist): JDK 17 maps an archive only over the class path it was written with."""
    release = java_home() / "release"
    parts = [str(java_home()), release.read_text() if release.is_file() else "", *class_path]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return settings.tools / "cds" / f"{name}-{key}.jsa"


def cds_archive(settings: LocalSettings) -> Path:
    """The local Spark session's archive: per JDK, PySpark and jar set."""
    import pyspark

    jars = [j.name for j in spark_jars(settings.tools)]
    return _class_archive(settings, "spark", [pyspark.__version__, *jars])


def metastore_cds_archive(settings: LocalSettings) -> Path:
    """The metastore's and schematool's archive. Their class path is metastore_classpath's:
    jars only, in a fixed order."""
    return _class_archive(
        settings, "metastore", list(map(str, metastore_classpath(settings.tools)))
    )


def cds_java_options(archive: Path, dump_to: str | None = None) -> list[str]:
    """JVM options that write the archive to `dump_to` (setup), map `archive`, or nothing
    when there is none."""
    if dump_to:
        return [f"-XX:ArchiveClassesAtExit={dump_to}", *CDS_QUIET]
    return [f"-XX:SharedArchiveFile={archive}", *CDS_QUIET] if archive.is_file() else []
