"""Write the report where it was asked for: a local path, or any Hadoop file system URI
(s3a://, the warehouse's own) through the session's own configuration and credentials."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from logberg.errors import ConfigError

NAME = "logberg-report.html"


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
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has its gateway
    target = jvm.org.apache.hadoop.fs.Path(uri)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    stream = target.getFileSystem(conf).create(target, True)
    try:
        stream.write(bytearray(body))
    finally:
        stream.close()
    return len(body)
