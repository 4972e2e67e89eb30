"""Write the report where it was asked for: a local path, or any Hadoop file system URI
(s3a://, the warehouse's own) through the session's own configuration and credentials."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError
from logberg.pipeline import jar

NAME = "logberg-report.html"
OBJECT_SINK = "dev.logberg.WholeObject"  # writes one row's bytes as one object


def default_output(warehouse: str) -> str:
    """Next to the tables: <warehouse>/reports/logberg-report.html."""
    return f"{warehouse.rstrip('/')}/reports/{NAME}"


def resolve(output: str) -> str:
    """A URI for `output`: a plain path becomes a file:// URI."""
    scheme = urlparse(output).scheme
    if scheme in ("", "file"):
        path = Path(urlparse(output).path if scheme else output).expanduser().absolute()
        if path.is_dir() or output.endswith("/"):
            path = path / NAME
        return path.as_uri()
    if scheme in ("s3", "s3a"):
        return output + (NAME if output.endswith("/") else "")
    raise ConfigError(f"--output {output!r}: expected a path, a file:// or an s3a:// URI")


def write(spark: SparkSession, uri: str, text: str) -> int:
    """Write `text` (UTF-8) to `uri` whole: a local file by rename, an object in one PUT
    (S3A makes it visible only on close). Returns the bytes written."""
    body = text.encode("utf-8")
    if uri.startswith("file:"):
        path = Path(urlparse(uri).path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, path)
        return len(body)
    # A data source of logberg's jar writes it from a task, with the session's Hadoop
    # configuration and credentials (over Spark Connect too: no py4j).
    jar.require(spark)  # the jar is there, or a clear error
    # One row in one partition, as a literal (createDataFrame would start a Python worker).
    frame = spark.range(0, 1, 1, 1).select(F.lit(bytearray(body)).alias("value"))
    frame.write.format(OBJECT_SINK).mode("append").save(uri)
    return len(body)
