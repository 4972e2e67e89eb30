"""`logberg sql`: the real spark-sql shell, with the session factory's configuration."""

from __future__ import annotations

import os
from pathlib import Path

from logberg.lakehouse.session import LakehouseConfig, SparkRuntime, session_conf


def spark_sql_argv(cfg: LakehouseConfig, runtime: SparkRuntime, args: list[str]) -> list[str]:
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    argv = [str(spark_home / "bin" / "spark-sql")]
    if runtime.master:
        argv += ["--master", runtime.master]
    for k, v in session_conf(cfg, runtime).items():
        argv += ["--conf", f"{k}={v}"]
    return [*argv, *args]


def exec_spark_sql(cfg: LakehouseConfig, runtime: SparkRuntime, args: list[str]) -> int:
    """Replace this process with spark-sql (never returns on success)."""
    cfg.validate(runtime.hint)
    argv = spark_sql_argv(cfg, runtime, args)
    env = {**os.environ, **runtime.env}
    env.setdefault("SPARK_HOME", str(Path(argv[0]).parents[1]))
    if runtime.workdir:
        os.chdir(runtime.workdir)  # spark-sql drops derby.log/metastore_db in the cwd
    os.execvpe(argv[0], argv, env)
    return 0  # not reached
