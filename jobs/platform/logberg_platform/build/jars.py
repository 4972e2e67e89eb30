"""Resolve the JVM artifacts logberg needs from Maven Central, once, into .tools/.

Run by ``make setup`` (``logberg setup jars``). Groups:

* ``spark``: the Iceberg Spark runtime (PySpark ships the rest of Spark);
* ``s3``: hadoop-aws and the AWS SDK v2 bundle it is built against (s3a://);
* ``hadoop``: hadoop-common and friends, for the standalone metastore;
* ``jdbc``: the PostgreSQL driver, for the metastore;
* ``agents``: ua-parser's JVM port (uap-java), the user-agent families of ingest;
* the Hive standalone metastore distribution itself (Maven Central, classifier ``bin``);
* logberg's own line parser (``logberg_platform.build.jvm``), compiled against PySpark's jars.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from pathlib import Path
from xml.sax.saxutils import escape

from logberg.errors import ServiceError
from logberg.versions import Pins, pins
from logberg_platform.build import jvm
from logberg_platform.local_settings import LocalSettings, java_home
from logberg_platform.setup_artifacts import hive_home, jar_dir

MAVEN_VERSION = "3.9.9"
CENTRAL = "https://repo1.maven.org/maven2"


def groups(p: Pins) -> dict[str, list[str]]:
    return {
        "spark": [
            f"org.apache.iceberg:iceberg-spark-runtime-{p.spark_minor}_{p.scala}:{p.iceberg}"
        ],
        "s3": [
            f"org.apache.hadoop:hadoop-aws:{p.hadoop}",
            f"software.amazon.awssdk:bundle:{p.aws_sdk}",
        ],
        "hadoop": [
            f"org.apache.hadoop:hadoop-common:{p.hadoop}",
            f"org.apache.hadoop:hadoop-mapreduce-client-core:{p.hadoop}",
            # Hive 3.1 still uses commons-collections 3; Hadoop 3.4 moved to collections4.
            "commons-collections:commons-collections:3.2.2",
        ],
        "jdbc": [f"org.postgresql:postgresql:{p.postgresql_jdbc}"],
        "agents": [f"com.github.ua-parser:uap-java:{p.uap_java}"],
        # Spark's Kafka source, beside PySpark's own jars (which have the rest of its tree).
        "kafka": p.kafka.spark_artifacts(p.scala),
        # The broker of `logberg local up --kafka`: a class path of its own (Kafka 4's
        # clients, Scala and Jackson, not Spark's).
        "kafka-broker": p.kafka.broker_artifacts(),
    }


# Groups whose artifacts bring their runtime trees; every other group is exactly its jars.
TRANSITIVE = ("hadoop", "s3", "kafka-broker")


def _pom(artifacts: list[str], transitive: bool = True) -> str:
    """A project depending on `artifacts`; not `transitive`: on them alone (their own
    dependencies excluded, so Maven never resolves them: spark-sql-kafka 4.1.3 names a
    token provider of its own version that the repository does not serve)."""
    alone = (
        "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
        "</exclusion></exclusions>"
    )
    deps = []
    for coord in artifacts:
        g, a, v = coord.split(":")
        deps.append(
            f"<dependency><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId>"
            f"<version>{escape(v)}</version>{'' if transitive else alone}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>dev.logberg</groupId><artifactId>jars</artifactId><version>0</version>"
        f"<dependencies>{''.join(deps)}</dependencies></project>"
    )


def maven(tools: Path) -> str:
    """A Maven binary: the one on PATH, else one fetched from Maven Central into tools."""
    found = shutil.which("mvn")
    if found:
        return found
    home = tools / f"apache-maven-{MAVEN_VERSION}"
    mvn = home / "bin" / "mvn"
    if mvn.is_file():
        return str(mvn)
    name = f"apache-maven-{MAVEN_VERSION}-bin.tar.gz"
    base = f"{CENTRAL}/org/apache/maven/apache-maven/{MAVEN_VERSION}/{name}"
    tools.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tools) as tmp:
        archive = Path(tmp) / "maven.tar.gz"
        urllib.request.urlretrieve(base, archive)
        expected = urllib.request.urlopen(base + ".sha512").read().decode().split()[0]
        actual = hashlib.sha512(archive.read_bytes()).hexdigest()
        if actual != expected:
            raise ServiceError(f"Maven download checksum mismatch for {base}")
        with tarfile.open(archive) as tar:
            tar.extractall(tools, filter="data")
    mvn.chmod(0o755)
    return str(mvn)


def _run_mvn(mvn: str, args: list[str], cwd: Path) -> None:
    env = dict(os.environ, JAVA_HOME=str(java_home()))
    proc = subprocess.run(
        [mvn, "-B", "-q", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise ServiceError(
            f"maven failed ({' '.join(args[:1])}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )


def resolve(settings: LocalSettings | None = None) -> Path:
    """Idempotently resolve every group; returns the tools directory."""
    tools = (settings or LocalSettings.from_env()).tools
    p = pins()
    mvn = maven(tools)
    for group, artifacts in groups(p).items():
        target = jar_dir(tools, group)
        stamp = target / ".resolved"
        want = "\n".join(artifacts)
        if stamp.is_file() and stamp.read_text() == want:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            # hadoop-aws and hadoop-common bring their runtime trees (hadoop-aws's own
            # hadoop deps are 'provided'), as the broker does; the Iceberg runtime and the
            # driver are self-contained, and Spark's Kafka source finds the rest in PySpark.
            transitive = group in TRANSITIVE
            Path(tmp, "pom.xml").write_text(_pom(artifacts, transitive))
            staging = Path(tmp) / "out"
            _run_mvn(
                mvn,
                [
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={staging}",
                    "-DincludeScope=runtime",
                    f"-DexcludeTransitive={str(not transitive).lower()}",
                ],
                Path(tmp),
            )
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(staging, target)
        stamp.write_text(want)
    home = hive_home(tools)
    if not (home / "lib").is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            _run_mvn(
                mvn,
                [
                    "dependency:unpack",
                    f"-Dartifact=org.apache.hive:hive-standalone-metastore:{p.hive}:tar.gz:bin",
                    f"-DoutputDirectory={tools}",
                ],
                Path(tmp),
            )
    jvm.local_jar(tools)  # logberg's own line parser, compiled here
    return tools
