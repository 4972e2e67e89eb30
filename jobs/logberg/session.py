"""The one SparkSession factory, used by every job, `logberg sql`/`query` and the tests.

It wires an Iceberg SparkCatalog named ``logberg`` over the Hive Metastore (``type=hive``)
and makes it the default catalog, so jobs and users write ``nginx_logs.<table>``. Spark's
own session catalog is wrapped by Iceberg's SparkSessionCatalog against the same
metastore, so plain ``spark-sql`` (``USE nginx_logs; SHOW TABLES;``) sees the same tables.

Inputs, in order of precedence: Spark conf already set (spark-submit / SparkApplication),
then LOGBERG_* environment variables, then the local defaults under $LOGBERG_HOME.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from logberg import cds, jars
from logberg.errors import ConfigError
from logberg.settings import LocalSettings, java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG = "logberg"
DATABASE = "nginx_logs"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# HotSpot does not JIT-compile a method over 8000 bytecodes, and the whole-stage code of
# the ingest (enrichment, agent classes) is larger than that: without the first flag it
# stays interpreted (bench/README.md: 1.7x on parse + enrich). The second makes a method
# wait for 5x the usual calls before it is compiled: the per-row code is still compiled
# within the first rows, but about half of the ~20,000 compilations of a job's start-up
# code (planning, the catalog, the writer's set-up) never happen; on 2 cores that
# compiler time was taken from the tasks (bench/README.md, item 18).
JIT_OPTIONS = "-XX:+UseG1GC -XX:-DontCompileHugeMethods -XX:CompileThresholdScaling=5"


@dataclass(frozen=True)
class LakehouseConfig:
    """Where the catalog, the warehouse and S3 are: the inputs to the session factory."""

    metastore_uri: str
    warehouse: str
    s3_endpoint: str | None = None
    s3_path_style: bool = True
    master: str | None = None
    local: bool = True
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, local: LocalSettings | None = None) -> LakehouseConfig:
        s = local or LocalSettings.from_env()
        in_cluster = (
            "PYSPARK_GATEWAY_PORT" in os.environ or os.environ.get("LOGBERG_PROFILE") == "cluster"
        )
        uri = os.environ.get("LOGBERG_METASTORE_URI") or s.metastore_uri
        warehouse = os.environ.get("LOGBERG_WAREHOUSE") or s.warehouse.as_uri()
        endpoint = os.environ.get("LOGBERG_S3_ENDPOINT") or None
        if endpoint is None and not in_cluster:
            # Locally, a running `logberg local up --s3` server serves s3a:// reads and writes.
            from logberg import s3server

            if s3server.is_running(s):
                endpoint = s.s3_endpoint
        return cls(
            metastore_uri=uri,
            warehouse=warehouse,
            s3_endpoint=endpoint,
            s3_path_style=os.environ.get("LOGBERG_S3_PATH_STYLE", "true").lower() != "false",
            master=os.environ.get("LOGBERG_SPARK_MASTER") or (None if in_cluster else "local[*]"),
            local=not in_cluster,
        )

    def validate(self) -> None:
        """Fail fast, naming the setting, before a JVM is started."""
        parsed = urlparse(self.metastore_uri)
        if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
            raise ConfigError(
                f"LOGBERG_METASTORE_URI={self.metastore_uri!r}: expected thrift://host:port"
            )
        if not _tcp_answers(parsed.hostname, parsed.port):
            hint = (
                " (LOGBERG_METASTORE_PORT); start it with `logberg local up`" if self.local else ""
            )
            raise ConfigError(
                f"LOGBERG_METASTORE_URI: the metastore at {self.metastore_uri} "
                f"does not answer{hint}"
            )
        scheme = urlparse(self.warehouse).scheme
        if scheme not in ("file", "s3a", "s3", "hdfs"):
            raise ConfigError(
                f"LOGBERG_WAREHOUSE={self.warehouse!r}: expected a file://, s3a:// or s3:// URI"
            )
        if _is_s3(self.warehouse):
            check_bucket(self.warehouse, "LOGBERG_WAREHOUSE", self.s3_endpoint)


def _is_s3(uri: str) -> bool:
    return urlparse(uri).scheme in ("s3", "s3a")


def _tcp_answers(host: str, port: int, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_bucket(uri: str, setting: str, endpoint: str | None) -> None:
    """Fail fast if the bucket of an s3/s3a URI is missing or unreachable."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    bucket = urlparse(uri).netloc
    client = boto3.client("s3", endpoint_url=endpoint) if endpoint else boto3.client("s3")
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise ConfigError(f"{setting}={uri}: bucket {bucket!r} does not exist") from None
        raise ConfigError(f"{setting}={uri}: cannot access bucket {bucket!r} ({code})") from None
    except BotoCoreError as e:
        raise ConfigError(f"{setting}={uri}: S3 endpoint unreachable ({e})") from None


def catalog_conf(cfg: LakehouseConfig) -> dict[str, str]:
    """Spark conf for the Iceberg catalogs, the warehouse and S3. Pure: easy to test."""
    conf = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hive",
        f"spark.sql.catalog.{CATALOG}.uri": cfg.metastore_uri,
        f"spark.sql.catalog.{CATALOG}.warehouse": cfg.warehouse,
        # Other processes commit to the same tables: always read the latest metadata.
        f"spark.sql.catalog.{CATALOG}.cache-enabled": "false",
        "spark.sql.defaultCatalog": CATALOG,
        # Plain spark-sql and Spark's Hive client reach the same metastore.
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        "spark.sql.catalog.spark_catalog.uri": cfg.metastore_uri,
        "spark.sql.catalog.spark_catalog.warehouse": cfg.warehouse,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": cfg.metastore_uri,
        "spark.sql.warehouse.dir": cfg.warehouse,
        # s3:// and s3a:// both go through S3A.
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.sql.session.timeZone": "UTC",
    }
    if cfg.s3_endpoint:
        conf.update(
            {
                "spark.hadoop.fs.s3a.endpoint": cfg.s3_endpoint,
                "spark.hadoop.fs.s3a.path.style.access": str(cfg.s3_path_style).lower(),
                "spark.hadoop.fs.s3a.connection.ssl.enabled": str(
                    cfg.s3_endpoint.startswith("https")
                ).lower(),
                "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION", "us-east-1"),
            }
        )
    return conf


def local_conf(settings: LocalSettings) -> dict[str, str]:
    """Local-mode tuning: small-box defaults, jars from .tools, quiet logs."""
    shuffle = os.environ.get("LOGBERG_SHUFFLE_PARTITIONS", "4")
    return {
        # On the JVM's own class path, not spark.jars: local mode then does not copy the
        # jars (the AWS SDK bundle is 600 MB) into every session's work directory.
        "spark.driver.extraClassPath": os.pathsep.join(
            str(j) for j in jars.spark_jars(settings.tools)
        ),
        "spark.driver.memory": os.environ.get("LOGBERG_DRIVER_MEMORY", "2g"),
        "spark.driver.extraJavaOptions": f"{JIT_OPTIONS} {cds.java_options(settings)} "
        f"-Dderby.system.home={settings.home / 'spark'}",
        "spark.sql.shuffle.partitions": shuffle,
        "spark.default.parallelism": shuffle,
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.enabled": os.environ.get("LOGBERG_SPARK_UI", "false"),
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": os.environ.get("LOGBERG_LOG_LEVEL", "WARN"),
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
    }


def spark_conf(cfg: LakehouseConfig, settings: LocalSettings) -> dict[str, str]:
    conf = catalog_conf(cfg)
    if cfg.local:
        conf.update(local_conf(settings))
    conf.update(cfg.extra)
    return conf


def build_session(
    app_name: str,
    cfg: LakehouseConfig | None = None,
    extra: Mapping[str, str] | None = None,
) -> SparkSession:
    """Create (or return) the SparkSession for logberg."""
    settings = LocalSettings.from_env()
    cfg = cfg or LakehouseConfig.from_env(settings)
    if cfg.local:
        java_home()  # fails fast when Java is missing
        os.environ.setdefault("JAVA_HOME", str(java_home()))
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        (settings.home / "spark" / "tmp").mkdir(parents=True, exist_ok=True)
        if cfg.s3_endpoint == settings.s3_endpoint:
            from logberg import s3server

            for k, v in s3server.client_env(settings).items():
                os.environ[k] = v  # the local server only knows its own keys
    cfg.validate()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if cfg.master:
        builder = builder.master(cfg.master)
    for key, value in {**spark_conf(cfg, settings), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    return spark


def ensure_database(spark: SparkSession) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{DATABASE}")
