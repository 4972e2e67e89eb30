"""logberg's own JVM code (jobs/logberg/java/dev/logberg/*.java), compiled into a small jar.

The line parser (`dev.logberg.LineScan`; a Spark Java UDF, `ParseLine`, and a data source
that parses files as it reads them, `LogLines`) replaces a regex, a split and a date
formatter per line (bench/README.md). Locally, `make setup` (`logberg setup jars`) builds
it into .tools/jars/logberg/, named after the sources and the PySpark version, where local
sessions find it (`logberg_platform.setup_artifacts`). The Spark image builds the same jar in a
build stage with a JDK (`python3 -m logberg_platform.build.jvm DIR`, DIR holding links to
the image's Spark jars) and copies it into /opt/spark/jars (images/spark/Dockerfile).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg_platform.setup_artifacts import (
    JAVA_SOURCES,
    PARSER_JAR_PREFIX,
    agent_jars,
    java_resources,
    java_sources,
    kafka_client_jars,
    parser_jar,
)

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed entry times: the same sources give the same jar


def javac(java_home: Path) -> Path:
    exe = java_home / "bin" / "javac"
    if not exe.is_file():
        raise ConfigError(
            f"JAVA_HOME={java_home} has no bin/javac: logberg compiles its line parser "
            "with a JDK 17 (a JRE is not enough)"
        )
    return exe


def build(spark_jars: Path, target: Path, java_home: Path, extra: Sequence[Path] = ()) -> Path:
    """Compile the sources against the Spark jars in `spark_jars` (and the jars `extra`) into
    the jar `target`, with the resources beside the classes."""
    if not any(spark_jars.glob("spark-sql-api*.jar")):
        raise ConfigError(f"{spark_jars}: no Spark jars to compile the line parser against")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        cmd = [
            str(javac(java_home)),
            "--release",
            "17",
            "-Xlint:all,-path,-serial",
            "-Werror",
            "-cp",
            os.pathsep.join([str(spark_jars / "*"), *map(str, extra)]),
            "-d",
            str(classes),
            *map(str, java_sources()),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ServiceError(f"javac failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        # Written beside the target, then renamed: a partial jar never has the final name.
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        entries = [(c, c.relative_to(classes)) for c in sorted(classes.rglob("*.class"))]
        entries += [(r, r.relative_to(JAVA_SOURCES)) for r in java_resources()]
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for path, name in entries:
                info = zipfile.ZipInfo(name.as_posix(), ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                jar.writestr(info, path.read_bytes())
        os.replace(partial, target)
    return target


def local_jar(tools: Path) -> Path:
    """The parser jar for this PySpark and these sources under `tools`, built if missing."""
    import pyspark

    from logberg_platform.local_settings import java_home

    target = parser_jar(tools)
    if target.is_file():
        return target
    # Older jars stay: other checkouts sharing these tools may still be on them (~50 KB each).
    extra = [*agent_jars(tools), *kafka_client_jars(tools)]
    return build(Path(pyspark.__file__).parent / "jars", target, java_home(), extra)


def main(argv: Sequence[str]) -> int:
    """`python -m logberg_platform.build.jvm SPARK_JARS_DIR`: the jar into that folder
    (the Spark image's build stage)."""
    if len(argv) != 1:
        print("usage: python -m logberg_platform.build.jvm SPARK_JARS_DIR", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    home = Path(os.environ.get("JAVA_HOME", "/opt/java/openjdk"))
    out = build(folder, folder / f"{PARSER_JAR_PREFIX}.jar", home)
    print(f"built {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
