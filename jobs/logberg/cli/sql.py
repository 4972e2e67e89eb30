"""`logberg sql`: the real spark-sql shell through the metastore (-e/-f pass through); on
the Spark Connect server (LOGBERG_SPARK_MODE), the same options over a Connect session."""

from __future__ import annotations

from logberg.cli.command import Command


def run(args: list[str]) -> int:
    from logberg.lakehouse import environment
    from logberg.lakehouse.sqlshell import exec_spark_sql

    env = environment.current()
    server = env.server() if env.uses_server() else None
    if server is not None:
        from logberg.cli.logs import quiet_query_context_logs
        from logberg.lakehouse import connect_shell
        from logberg.lakehouse.connect import remote_session

        quiet_query_context_logs()  # a statement's error is the shell's one line
        # a session of its own: what a user types may change it (SET, USE, temp views)
        return connect_shell.run(remote_session(server), args)
    cfg = env.lakehouse_config()
    return exec_spark_sql(cfg, env.spark_runtime(cfg), args)


COMMAND = Command(
    "sql",
    "the spark-sql shell through the metastore (-e/-f pass through)",
    passthrough=run,
    order=20,
)
