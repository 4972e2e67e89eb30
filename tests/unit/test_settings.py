"""Unit tests for settings, pins and the session factory's pure conf (no JVM)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from logberg.errors import ConfigError
from logberg.lakehouse.session import CATALOG, LakehouseConfig, catalog_conf
from logberg.versions import pins
from logberg_platform.local_settings import LocalSettings, MetastoreDb

REPO = Path(__file__).resolve().parents[2]


def test_metastore_db_defaults_to_embedded_derby() -> None:
    assert MetastoreDb.parse(None).kind == "derby"
    assert MetastoreDb.parse("derby").kind == "derby"


def test_metastore_db_parses_postgres_url() -> None:
    db = MetastoreDb.parse("postgresql://hive@db.internal:6543/metastore")
    assert (db.kind, db.user, db.host, db.port, db.database) == (
        "postgres",
        "hive",
        "db.internal",
        6543,
        "metastore",
    )


@pytest.mark.parametrize(
    "url",
    [
        "mysql://u@h/db",
        "postgresql://h:5432/db",
        "postgresql://u@h:5432/",
        "postgresql://u:pw@h/db",
    ],
)
def test_bad_metastore_db_names_the_setting(url: str) -> None:
    with pytest.raises(ConfigError, match="LOGBERG_METASTORE_DB"):
        MetastoreDb.parse(url)


@pytest.mark.parametrize("value", ["abc", "0", "70000"])
def test_bad_port_names_the_setting(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LOGBERG_METASTORE_PORT", value)
    with pytest.raises(ConfigError, match="LOGBERG_METASTORE_PORT"):
        LocalSettings.from_env()


def test_home_holds_all_local_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path))
    s = LocalSettings.from_env()
    for p in (s.warehouse, s.landing, s.logs, s.metastore_dir, s.s3_dir, s.run):
        assert p.is_relative_to(tmp_path)


def test_catalog_conf_wires_iceberg_over_hms() -> None:
    cfg = LakehouseConfig(
        metastore_uri="thrift://ms:9083",
        warehouse="s3a://wh/warehouse",
        s3_endpoint="http://127.0.0.1:9000",
    )
    conf = catalog_conf(cfg)
    assert conf[f"spark.sql.catalog.{CATALOG}"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf[f"spark.sql.catalog.{CATALOG}.type"] == "hive"
    assert conf[f"spark.sql.catalog.{CATALOG}.uri"] == "thrift://ms:9083"
    assert conf["spark.sql.defaultCatalog"] == CATALOG
    assert conf["spark.sql.catalog.spark_catalog"].endswith("SparkSessionCatalog")
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://ms:9083"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    # Credentials never travel in Spark conf: S3A takes them from the standard chain.
    assert not any(re.search(r"access\.key|secret", k) for k in conf)
    # The metastore (3.1.3) lacks HIVE-26882: commits keep the metastore lock, and a commit
    # that meets another's lock checks again within half a second.
    assert not any("lock-enabled" in k for k in conf)
    assert int(conf["spark.hadoop.iceberg.hive.lock-check-max-wait-ms"]) <= 500


def test_no_s3_endpoint_means_aws_defaults() -> None:
    conf = catalog_conf(LakehouseConfig(metastore_uri="thrift://m:1", warehouse="s3://b/w"))
    assert "spark.hadoop.fs.s3a.endpoint" not in conf


def test_bad_metastore_uri_fails_fast() -> None:
    with pytest.raises(ConfigError, match="LOGBERG_METASTORE_URI"):
        LakehouseConfig(metastore_uri="http://x", warehouse="file:///tmp/w").validate()


def test_pins_are_one_source() -> None:
    """pyproject's pyspark pin and PySpark's bundled Hadoop agree with versions.toml."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert f"pyspark=={pins().spark}" in pyproject["project"]["dependencies"]
    import pyspark

    assert pyspark.__version__ == pins().spark
    bundled = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*")}
    assert bundled == {f"hadoop-client-api-{pins().hadoop}.jar"}


def test_metastore_is_a_version_spark_and_iceberg_speak_to() -> None:
    # Hive >= 4.0.1 dropped thrift get_table (HIVE-26537), which Spark's Hive 2.3 client and
    # Iceberg's HiveCatalog call; the integration tests prove the pinned pairing end to end.
    major, minor, patch = (int(x) for x in pins().hive.split("."))
    assert (major, minor, patch) < (4, 0, 1)


def test_class_archive_options_follow_the_archive(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from logberg_platform import local, setup_artifacts

    jars = tmp_path / "jars" / "spark"
    jars.mkdir(parents=True)
    (jars / "iceberg-spark-runtime.jar").write_bytes(b"")
    setup_artifacts.jar_dir(tmp_path, "agents").mkdir(parents=True)
    (setup_artifacts.jar_dir(tmp_path, "agents") / "uap-java.jar").write_bytes(b"")
    parser = setup_artifacts.parser_jar(tmp_path)
    parser.parent.mkdir(parents=True)
    parser.write_bytes(b"")
    monkeypatch.setenv("LOGBERG_TOOLS", str(tmp_path))
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(setup_artifacts.CDS_DUMP_ENV, raising=False)
    s = LocalSettings.from_env()
    archive = setup_artifacts.cds_archive(s)
    assert setup_artifacts.cds_java_options(archive) == []  # no archive yet: start without one
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={archive}" in setup_artifacts.cds_java_options(archive)
    cfg = LakehouseConfig(metastore_uri=s.metastore_uri, warehouse=s.warehouse.as_uri())
    conf = local.spark_runtime(s, cfg).conf
    assert f"-XX:SharedArchiveFile={archive}" in conf["spark.driver.extraJavaOptions"]
    # Jars on the JVM's class path (no per-session copies), never through spark.jars.
    assert "spark.jars" not in conf
    assert str(jars / "iceberg-spark-runtime.jar") in conf["spark.driver.extraClassPath"]
    assert str(parser) in conf["spark.driver.extraClassPath"]
    # Another jar set is another archive; the old one is not used for it.
    (jars / "other.jar").write_bytes(b"")
    other = setup_artifacts.cds_archive(s)
    assert other != archive
    assert setup_artifacts.cds_java_options(other) == []
    out = str(tmp_path / "out.jsa")
    assert f"-XX:ArchiveClassesAtExit={out}" in setup_artifacts.cds_java_options(other, out)


def test_metastore_class_archive_is_per_jar_set_and_its_conf_is_off_the_class_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metastore's JVMs map the archive `make setup` recorded for this JDK and jar set;
    the conf folder is named by METASTORE_CONF_DIR, never put on the class path (a folder
    there would stop JDK 17 from mapping the archive)."""
    from logberg_platform import metastore, setup_artifacts

    lib = setup_artifacts.hive_home(tmp_path) / "lib"
    lib.mkdir(parents=True)
    (lib / "hive-standalone-metastore-3.1.3.jar").write_bytes(b"")
    monkeypatch.setenv("LOGBERG_TOOLS", str(tmp_path))
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(setup_artifacts.METASTORE_CDS_DUMP_ENV, raising=False)
    s = LocalSettings.from_env()
    conf = s.metastore_dir / "conf"
    cmd = metastore._java_cmd(s, conf, metastore.MAIN_CLASS, [])
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in cmd)  # none recorded yet
    class_path = cmd[cmd.index("-cp") + 1].split(":")
    assert str(conf) not in class_path and all(p.endswith(".jar") for p in class_path)
    assert metastore._env(s)["METASTORE_CONF_DIR"] == str(conf)
    archive = setup_artifacts.metastore_cds_archive(s)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"x")
    for main in (metastore.MAIN_CLASS, metastore.SCHEMA_TOOL):
        assert f"-XX:SharedArchiveFile={archive}" in metastore._java_cmd(s, conf, main, [])
    # Setup's metastore writes it; schematool never does.
    monkeypatch.setenv(setup_artifacts.METASTORE_CDS_DUMP_ENV, str(tmp_path / "m.jsa"))
    dump = f"-XX:ArchiveClassesAtExit={tmp_path / 'm.jsa'}"
    assert dump in metastore._java_cmd(s, conf, metastore.MAIN_CLASS, [])
    assert dump not in metastore._java_cmd(s, conf, metastore.SCHEMA_TOOL, [])
    # Another jar set is another archive.
    (lib / "other.jar").write_bytes(b"")
    assert setup_artifacts.metastore_cds_archive(s) != archive


def test_a_session_never_builds_what_setup_makes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A missing or stale parser jar is an error naming `make setup`, not a javac run."""
    from logberg_platform import local

    jars = tmp_path / "jars" / "spark"
    jars.mkdir(parents=True)
    (jars / "iceberg-spark-runtime.jar").write_bytes(b"")
    monkeypatch.setenv("LOGBERG_TOOLS", str(tmp_path))
    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))
    s = LocalSettings.from_env()
    cfg = LakehouseConfig(metastore_uri=s.metastore_uri, warehouse=s.warehouse.as_uri())
    with pytest.raises(ConfigError, match="make setup"):
        local.spark_runtime(s, cfg)
    assert not (tmp_path / "jars" / "logberg").exists()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("-XX:+NoSuchOptionAnywhere", "the JVM refuses it: Unrecognized VM option"),
        ("-Xmx1g TieredStopAtLevel=1", "'TieredStopAtLevel=1' is not a JVM option"),
        ("-Dx='unclosed", "No closing quotation"),
    ],
)
def test_java_options_the_jvm_refuses_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    """Checked by the JDK itself before any service or session starts with them."""
    from logberg_platform.local_settings import java_options

    monkeypatch.setenv("LOGBERG_JAVA_OPTIONS", value)
    with pytest.raises(ConfigError, match="LOGBERG_JAVA_OPTIONS") as e:
        java_options()
    assert said in str(e.value)


def test_java_options_follow_logbergs_own_in_every_jvm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After logberg's options (the later of two wins), in Spark's driver options, the
    metastore's and the broker's command lines (of `make setup`'s tools); unset, nothing
    is added."""
    from logberg_platform import kafka_broker, local, metastore

    monkeypatch.setenv("LOGBERG_HOME", str(tmp_path / "home"))
    s = LocalSettings.from_env()
    cfg = LakehouseConfig(metastore_uri=s.metastore_uri, warehouse=s.warehouse.as_uri())

    def commands() -> tuple[str, list[str], list[str]]:
        driver = local.spark_runtime(s, cfg).conf["spark.driver.extraJavaOptions"]
        meta = metastore._java_cmd(s, tmp_path, metastore.MAIN_CLASS, [])
        broker = kafka_broker._java(s, kafka_broker.MAIN_CLASS)
        return driver, meta, broker

    monkeypatch.delenv("LOGBERG_JAVA_OPTIONS", raising=False)
    driver, meta, broker = commands()
    assert "TieredStopAtLevel" not in " ".join([driver, *meta, *broker])
    monkeypatch.setenv("LOGBERG_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 '-Dlogberg.note=a b'")
    driver, meta, broker = commands()
    assert driver.endswith("-XX:TieredStopAtLevel=1 '-Dlogberg.note=a b'")
    for argv in (meta, broker):
        at = argv.index("-XX:TieredStopAtLevel=1")
        assert argv[at + 1] == "-Dlogberg.note=a b"
        assert argv.index("-XX:+UseG1GC") < at < argv.index("-cp")
