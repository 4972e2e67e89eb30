"""`logberg sql`: the real spark-sql shell, configured by the session factory."""

from __future__ import annotations

import os
from pathlib import Path

from logberg.session import LakehouseConfig, spark_conf
from logberg.settings import LocalSettings, java_home


def spark_sql_argv(args: list[str]) -> list[str]:
    import pyspark

    settings = LocalSettings.from_env()
    cfg = LakehouseConfig.from_env(settings)
    cfg.validate()
    spark_home = Path(pyspark.__file__).parent
    argv = [str(spark_home / "bin" / "spark-sql")]
    if cfg.master:
        argv += ["--master", cfg.master]
    for k, v in spark_conf(cfg, settings).items():
        argv += ["--conf", f"{k}={v}"]
    return [*argv, *args]


def exec_spark_sql(args: list[str]) -> int:
    settings = LocalSettings.from_env()
    argv = spark_sql_argv(args)
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", str(java_home()))
    env.setdefault("SPARK_HOME", str(Path(argv[0]).parents[1]))
    cfg = LakehouseConfig.from_env(settings)
    if cfg.s3_endpoint and cfg.s3_endpoint == settings.s3_endpoint:
        from logberg import s3server

        env.update(s3server.client_env(settings))
    (settings.home / "spark" / "tmp").mkdir(parents=True, exist_ok=True)
    os.chdir(settings.home / "spark")  # spark-sql drops derby.log/metastore_db in cwd otherwise
    os.execvpe(argv[0], argv, env)
    return 0  # not reached
