"""The one SparkSession factory, for every job, `logberg sql`/`query` and the tests.

It wires an Iceberg SparkCatalog named ``logberg`` over the Hive Metastore (``type=hive``)
and makes it the default catalog, so jobs and users write ``nginx_logs.<table>``. Spark's
own session catalog is wrapped by Iceberg's SparkSessionCatalog against the same
metastore, so plain ``spark-sql`` (``USE nginx_logs; SHOW TABLES;``) sees the same tables.

Two inputs, both plain data: a `LakehouseConfig` (where the metastore, the warehouse and S3
are) and a `SparkRuntime` (how to start Spark in this process: master, class path, JVM
options). In a cluster the runtime is empty, as the SparkApplication sets it; on a laptop
the local platform resolves it from what `make setup` built. Nothing here builds anything.
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from logberg.errors import ConfigError
from logberg.lakehouse import hadoop

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG = "logberg"
METASTORE_CLIENTS = "8"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# HotSpot does not JIT-compile a method over 8000 bytecodes, and the whole-stage code of
# the ingest is larger than that: without -DontCompileHugeMethods it stays interpreted
# (bench/README.md: 1.7x on parse + enrich). A job's start-up code (planning, the SQL
# parser, Janino, closure serialisation, the catalog) is warm enough for C2, whose ~25
# biggest compilations alone cost 6 s of CPU at 5M lines; the Tier4 thresholds, 10x the
# defaults, leave such code to C1 and keep C2 for the per-row loops, which pass them within
# the first rows. The parallel collector has no concurrent threads or write barriers to pay
# for. On 2 cores: ingest 5M 35.1 - 38.1 s -> 31.4 - 32.5 s, analytics 26.8 - 28.3 s ->
# 22.9 - 24.7 s, alternating, whole processes (bench/README.md, item 19).
# A long-lived JVM (the Spark Connect server) keeps HotSpot's own thresholds: its C2
# compilations are paid once and serve every later command.
SERVER_JIT_OPTIONS = "-XX:+UseParallelGC -XX:-DontCompileHugeMethods"
JIT_OPTIONS = (
    f"{SERVER_JIT_OPTIONS} -XX:Tier4InvocationThreshold=50000 "
    "-XX:Tier4MinInvocationThreshold=6000 -XX:Tier4CompileThreshold=150000 "
    "-XX:Tier4BackEdgeThreshold=400000"
)
# What Spark masks in its logs, UI and event logs. A conf entry whose key or value matches
# spark.redaction.regex (Spark's default plus `jaas`: a JAAS line may hold a key or token
# under any name); a data source option (the Kafka readers' `kafka.KEY`, from
# kafka_options) whose key or value matches spark.sql.redaction.options.regex or the former
# (Spark's default `url` plus the keys kafka_options.SECRET_KEY calls secrets: the JAAS
# configuration holds the SASL password under a key Spark's defaults do not match).
# `passw(or)?d`: password and passwd (and no credential scanner reads the word as one).
REDACTION = {
    "spark.redaction.regex": "(?i)secret|passw(or)?d|token|access[.]?key|jaas",
    "spark.sql.redaction.options.regex": (
        "(?i)url|passw(or)?d|secret|token|jaas|ssl[.]keystore[.]key|ssl[.]key[.]pem"
        "|sasl[.]oauthbearer[.]config"
    ),
}
WAREHOUSE_SCHEMES = ("file", "s3a", "s3", "hdfs")


@dataclass(frozen=True)
class LakehouseConfig:
    """Where the catalog, the warehouse and S3 are."""

    metastore_uri: str
    warehouse: str
    s3_endpoint: str | None = None  # None: AWS S3 itself
    s3_path_style: bool = True
    s3_region: str | None = None

    @classmethod
    def from_env(cls, defaults: LakehouseConfig | None = None) -> LakehouseConfig:
        """LOGBERG_METASTORE_URI, LOGBERG_WAREHOUSE, LOGBERG_S3_ENDPOINT,
        LOGBERG_S3_PATH_STYLE and AWS_REGION, over `defaults` (the local platform's)."""
        uri = os.environ.get("LOGBERG_METASTORE_URI") or (defaults and defaults.metastore_uri)
        warehouse = os.environ.get("LOGBERG_WAREHOUSE") or (defaults and defaults.warehouse)
        for name, value in (("LOGBERG_METASTORE_URI", uri), ("LOGBERG_WAREHOUSE", warehouse)):
            if not value:
                raise ConfigError(f"{name} is not set (required outside the local platform)")
        endpoint = os.environ.get("LOGBERG_S3_ENDPOINT") or (defaults and defaults.s3_endpoint)
        region = os.environ.get("AWS_REGION") or (
            "us-east-1" if endpoint else (defaults and defaults.s3_region)
        )
        return cls(
            metastore_uri=str(uri),
            warehouse=str(warehouse),
            s3_endpoint=endpoint or None,
            s3_path_style=os.environ.get("LOGBERG_S3_PATH_STYLE", "true").lower() != "false",
            s3_region=region or None,
        )

    def validate(self, hint: str = "") -> None:
        """Fail fast, naming the setting, before a JVM is started. `hint`: how to start
        the metastore, when that is ours to say."""
        parsed = urlparse(self.metastore_uri)
        if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
            raise ConfigError(
                f"LOGBERG_METASTORE_URI={self.metastore_uri!r}: expected thrift://host:port"
            )
        if not tcp_answers(parsed.hostname, parsed.port):
            raise ConfigError(
                f"LOGBERG_METASTORE_URI: the metastore at {self.metastore_uri} "
                f"does not answer{hint}"
            )
        if urlparse(self.warehouse).scheme not in WAREHOUSE_SCHEMES:
            raise ConfigError(
                f"LOGBERG_WAREHOUSE={self.warehouse!r}: expected a file://, s3a:// or s3:// URI"
            )
        if is_s3(self.warehouse):
            check_bucket(self.warehouse, "LOGBERG_WAREHOUSE", self.s3_endpoint)

    def s3a(self) -> dict[str, str]:
        return hadoop.s3a_properties(self.s3_endpoint, self.s3_path_style, self.s3_region)


@dataclass(frozen=True)
class SparkRuntime:
    """How Spark starts in this process. Empty in a cluster (spark-submit has set it)."""

    master: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)  # class path, memory, JVM options
    env: Mapping[str, str] = field(default_factory=dict)  # for the JVM: JAVA_HOME, S3 keys
    hint: str = ""  # appended to "the metastore does not answer"
    workdir: str | None = None  # where spark-sql may drop derby.log and metastore_db


def is_s3(uri: str) -> bool:
    return urlparse(uri).scheme in ("s3", "s3a")


def tcp_answers(host: str, port: int, timeout: float = 3.0) -> bool:
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
    """Spark conf for the Iceberg catalogs, the warehouse and S3, and what Spark redacts
    (REDACTION). Pure: easy to test."""
    conf = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hive",
        f"spark.sql.catalog.{CATALOG}.uri": cfg.metastore_uri,
        f"spark.sql.catalog.{CATALOG}.warehouse": cfg.warehouse,
        # Other processes commit to the same tables: always read the latest metadata.
        f"spark.sql.catalog.{CATALOG}.cache-enabled": "false",
        # Metastore connections per catalog (Iceberg's default: 2). Analytics commits six
        # tables at once, each commit several metastore calls (lock, check, get, alter,
        # unlock), and a Spark Connect server serves every client's jobs from one pool.
        f"spark.sql.catalog.{CATALOG}.clients": METASTORE_CLIENTS,
        "spark.sql.defaultCatalog": CATALOG,
        # Plain spark-sql and Spark's Hive client reach the same metastore.
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        "spark.sql.catalog.spark_catalog.uri": cfg.metastore_uri,
        "spark.sql.catalog.spark_catalog.warehouse": cfg.warehouse,
        "spark.sql.catalog.spark_catalog.clients": METASTORE_CLIENTS,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": cfg.metastore_uri,
        "spark.sql.warehouse.dir": cfg.warehouse,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # Analytics groups 2.5M (week, address, path) keys per 5M lines: the small first-level
        # hash map in front of the main one only adds a probe per row there (0.5 s of 8 s).
        "spark.sql.codegen.aggregate.map.twolevel.enabled": "false",
        # A commit takes the table's metastore lock. Hive 3.1.3 lacks HIVE-26882 (the atomic
        # alter_table on an expected metadata_location, in 2.3.10 and 4.0), so Iceberg's
        # lock-free commit (engine.hive.lock-enabled=false) could lose a concurrent commit:
        # the lock stays. Hive has no lock notification: a commit that finds the table
        # locked by another writer polls, from lock-check-min-wait-ms growing 1.5x per check
        # up to lock-check-max-wait-ms. A lock is held for one metadata swap (tens of ms),
        # so Iceberg's 5 s ceiling only oversleeps; 500 ms bounds that at 2 checks a second.
        # An uncontended commit (each analytics table has its own lock) never waits.
        "spark.hadoop.iceberg.hive.lock-check-min-wait-ms": "20",
        "spark.hadoop.iceberg.hive.lock-check-max-wait-ms": "500",
        **REDACTION,
    }
    conf.update(hadoop.spark_properties(cfg.s3a()))
    return conf


def session_conf(cfg: LakehouseConfig, runtime: SparkRuntime) -> dict[str, str]:
    return {**catalog_conf(cfg), **runtime.conf}


# Two local-mode applications that start in the same millisecond get the same id (Spark's
# "local-<milliseconds>"), and the second finds the first's event log folder in the home's
# shared spark.eventLog.dir: its SparkContext fails to start with this. Started again a few
# milliseconds later, it gets an id of its own (the other application's log is untouched).
APP_ID_CLASH = "Target log directory already exists"
SESSION_STARTS = 5


def build_session(
    app_name: str,
    cfg: LakehouseConfig,
    runtime: SparkRuntime | None = None,
    extra: Mapping[str, str] | None = None,
    validate: bool = True,
) -> SparkSession:
    """Create (or return) this process's SparkSession for logberg."""
    runtime = runtime or SparkRuntime()
    os.environ.update(runtime.env)  # before the JVM starts: it inherits them
    if validate:
        cfg.validate(runtime.hint)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if runtime.master:
        builder = builder.master(runtime.master)
    for key, value in {**session_conf(cfg, runtime), **(extra or {})}.items():
        builder = builder.config(key, value)
    for _ in range(SESSION_STARTS - 1):
        try:
            return builder.getOrCreate()
        except Exception as e:
            if APP_ID_CLASH not in str(e):
                raise
            time.sleep(0.005 + random.random() * 0.05)  # then an id of its own
    return builder.getOrCreate()
