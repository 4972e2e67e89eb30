"""Local sessions' `file:` paths (dev.logberg.NioLocalFileSystem): modes set through java.nio,
not a `chmod` process per new folder, and the same modes Hadoop's own class sets."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession


def hadoop_fs(spark: SparkSession, path: Path) -> tuple[Any, Any]:
    """The Hadoop FileSystem the session's JVM uses for `path`, and the path as Hadoop's."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    jpath = jvm.org.apache.hadoop.fs.Path(f"file://{path}")
    return jpath.getFileSystem(conf), jpath


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_local_sessions_set_modes_through_nio_as_hadoop_does(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "table"
    fs, _ = hadoop_fs(spark, root)
    assert fs.getClass().getName() == "dev.logberg.NioLocalFileSystem"

    # A write makes its folders (partition folders too) with Hadoop's default, 0777 less its
    # own umask (fs.permissions.umask-mode, 022), whatever the process's umask.
    saved = os.umask(0o077)
    try:
        spark.range(4).selectExpr("id", "id % 2 AS part").write.partitionBy("part").parquet(
            root.as_uri()
        )
    finally:
        os.umask(saved)
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["part=0", "part=1"]
    for folder in (root, root / "part=0", root / "part=1"):
        assert mode(folder) == 0o755, folder
    assert spark.read.parquet(root.as_uri()).count() == 4

    # An explicit mode, down to no bits at all, is what the file then has.
    target = next((root / "part=0").glob("*.parquet"))
    fs, jtarget = hadoop_fs(spark, target)
    jvm: Any = spark.sparkContext._jvm
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission
    for octal in ("640", "000", "755"):
        fs.setPermission(jtarget, permission(octal))
        assert mode(target) == int(octal, 8), octal

    # A mode beyond the nine bits (sticky) is Hadoop's own way: it is kept too.
    folder, jfolder = hadoop_fs(spark, root / "part=1")
    folder.setPermission(jfolder, permission("1777"))
    assert mode(root / "part=1") == 0o1777
