"""`logberg sql`: the real spark-sql shell through the metastore (-e/-f pass through)."""

from __future__ import annotations

from logberg.cli.command import Command


def run(args: list[str]) -> int:
    from logberg.lakehouse import environment
    from logberg.lakehouse.sqlshell import exec_spark_sql

    env = environment.current()
    cfg = env.lakehouse_config()
    return exec_spark_sql(cfg, env.spark_runtime(cfg), args)


COMMAND = Command(
    "sql",
    "the spark-sql shell through the metastore (-e/-f pass through)",
    passthrough=run,
    order=20,
)
