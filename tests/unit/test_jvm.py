"""Building logberg's JVM parser jar (logberg_platform.build.jvm) with the real javac."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark
import pytest

from logberg.errors import ConfigError
from logberg_platform import setup_artifacts
from logberg_platform.build import jvm
from logberg_platform.local_settings import LocalSettings, java_home

SPARK_JARS = Path(pyspark.__file__).parent / "jars"
# ua-parser's JVM port, which the classifier compiles against, and Kafka's client, which
# the topic reader does (`make setup` resolved them).
TOOLS = LocalSettings.from_env().tools
AGENT_JARS = setup_artifacts.agent_jars(TOOLS)
EXTRA_JARS = [*AGENT_JARS, *setup_artifacts.kafka_client_jars(TOOLS)]


@pytest.mark.slow
def test_build_is_reproducible_and_holds_the_parser(tmp_path: Path) -> None:
    a = jvm.build(SPARK_JARS, tmp_path / "a" / "p.jar", java_home(), EXTRA_JARS)
    b = jvm.build(SPARK_JARS, tmp_path / "b" / "p.jar", java_home(), EXTRA_JARS)
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as jar:
        names = jar.namelist()
        rules = jar.read("dev/logberg/agents.rules")
    for cls in ("ParseLine", "LineScan", "LogLines", "KafkaLines", "LineRows", "Reject"):
        assert f"dev/logberg/{cls}.class" in names
    assert {"dev/logberg/Agents.class", "dev/logberg/ClassifyAgent.class"} <= set(names)
    assert rules == (setup_artifacts.JAVA_SOURCES / "dev" / "logberg" / "agents.rules").read_bytes()
    assert not list(a.parent.glob(".*")), "no partial jar left behind"


@pytest.mark.slow
def test_local_jar_is_named_after_sources_and_spark(tmp_path: Path) -> None:
    for group, jars in (
        ("agents", AGENT_JARS),
        ("kafka", setup_artifacts.kafka_client_jars(TOOLS)),
    ):
        folder = setup_artifacts.jar_dir(tmp_path, group)
        folder.mkdir(parents=True)
        for j in jars:
            (folder / j.name).symlink_to(j)
    jar = jvm.local_jar(tmp_path)
    fingerprint = setup_artifacts.parser_fingerprint(pyspark.__version__)
    assert jar.name == f"{setup_artifacts.PARSER_JAR_PREFIX}-{fingerprint}.jar"
    assert fingerprint != setup_artifacts.parser_fingerprint("0.0.0")
    assert setup_artifacts.parser_jar(tmp_path) == jar  # where sessions look for it
    other = jar.with_name(f"{setup_artifacts.PARSER_JAR_PREFIX}-000000000000.jar")
    other.write_bytes(b"old")
    jar.unlink()
    assert jvm.local_jar(tmp_path) == jar and jar.is_file()
    assert other.exists(), "a jar for other sources stays (another checkout may use it)"


def test_a_jre_without_javac_fails_naming_java_home(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    with pytest.raises(ConfigError, match=f"JAVA_HOME={tmp_path} has no bin/javac"):
        jvm.build(SPARK_JARS, tmp_path / "p.jar", tmp_path)


def test_no_spark_jars_fails_naming_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=str(tmp_path)):
        jvm.build(tmp_path, tmp_path / "p.jar", java_home())
