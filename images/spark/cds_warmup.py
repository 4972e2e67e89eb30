"""The Spark image's class archive warm-up (images/spark/Dockerfile runs it at build time).

One small local-mode run of what the image's JVMs do: parse lines with logberg's JVM
parser, write, MERGE and read back an Iceberg table, aggregate; then load the classes of
the parts it cannot run offline (the Hive metastore client, S3A, the Kubernetes executor).
spark-submit runs it with -XX:ArchiveClassesAtExit: the JVM writes every class it loaded to
the archive when it exits, and the image's drivers and executors map that archive instead
of parsing and verifying those classes again at each start (images/spark/entrypoint.sh).
It writes only under the folder given as its one argument.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from logberg.pipeline import parse

LINES = [
    '10.0.0.1 - - [01/Jan/2025:00:00:01 +0000] "GET /a.html HTTP/1.1" 200 512 "-" "Mozilla/5.0"',
    '10.0.0.2 - - [01/Jan/2025:00:00:02 +0000] "POST /b HTTP/1.1" 404 0 "-" "curl/8.0"',
    "not a log line",
]

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"

# Loaded, not run: classes of the metastore client, S3A and the executor's backend.
CLASSES = [
    "org.apache.iceberg.hive.HiveCatalog",
    "org.apache.hadoop.hive.metastore.HiveMetaStoreClient",
    "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
    "org.apache.spark.deploy.k8s.submit.KubernetesClientApplication",
]


def main(folder: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.sql.catalog.warm", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.warm.type", "hadoop")
        .config("spark.sql.catalog.warm.warehouse", f"file://{folder}/warehouse")
        .config("spark.sql.extensions", EXTENSIONS)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.local.dir", f"{folder}/tmp")
        .getOrCreate()
    )
    lines = spark.createDataFrame([(line,) for line in LINES], "value string")
    parsed = parse.parse_lines(lines).withColumn("day", F.to_date("timestamp"))
    parsed.writeTo("warm.db.lines").partitionedBy(F.col("day")).createOrReplace()
    parsed.createOrReplaceTempView("incoming")
    spark.sql(
        "MERGE INTO warm.db.lines t USING incoming s ON t.value = s.value "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    by_day = Window.partitionBy("day").orderBy(F.desc("requests"))
    top = (
        spark.table("warm.db.lines")
        .where(F.col("reject_reason").isNull())
        .groupBy("day", "ip_address")
        .agg(F.count("*").alias("requests"))
        .withColumn("rank", F.row_number().over(by_day))
    )
    top.writeTo("warm.db.top").createOrReplace()
    if spark.table("warm.db.top").count() != 2:
        raise SystemExit("cds warm-up: unexpected result")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    for name in CLASSES:
        jvm.java.lang.Class.forName(name)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
