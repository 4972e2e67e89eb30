"""Device class, browser and OS of the user agent, on the JVM (no Python UDF).

ua-parser (uap-core's maintained rules, through its JVM port) gives the browser, OS and
device families; logberg's rules (jobs/logberg/java/dev/logberg/agents.rules) put its own
bot and app markers on top and map the families to a device class: bot, tablet, mobile,
desktop or other. `dev.logberg.ClassifyAgent` is the Java UDF; each distinct agent is
parsed once per JVM, so the cost grows with distinct agents, not with lines.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError

AGENT_UDF = "logberg_classify_agent"
AGENT_CLASS = "dev.logberg.ClassifyAgent"


def register(spark: SparkSession) -> None:
    """Make the JVM classifier callable as `AGENT_UDF` in this session, once (registering
    again logs a warning). Asked of the session's function registry, not the catalog,
    which would reach for the metastore."""
    jvm: Any = spark.sparkContext._jvm  # py4j: untyped
    session: Any = spark._jsparkSession
    name = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier.apply(AGENT_UDF)
    if session.sessionState().functionRegistry().functionExists(name):
        return
    return_type = jvm.dev.logberg.ClassifyAgent.RETURN_TYPE
    if not isinstance(return_type, str):  # py4j hands back a package for a missing class
        raise ConfigError(
            f"{AGENT_CLASS} is not on the Spark class path: run `make setup` (local), or use "
            "the logberg Spark image (images/spark)"
        )
    spark.udf.registerJavaFunction(AGENT_UDF, AGENT_CLASS, return_type)


def _classes(agent: Column) -> Column:
    """device_type, browser and os of an agent, as one struct (`register` first)."""
    return F.call_udf(AGENT_UDF, agent)


def classify_device(df: DataFrame, agent: str = "user_agent") -> DataFrame:
    """Add device_type, browser, os and is_bot from the user-agent column."""
    register(df.sparkSession)
    cls = df.select("*", _classes(F.col(agent)).alias("_classes"))
    c = F.col("_classes")
    return cls.select(
        *[F.col(n) for n in df.columns],
        c["device_type"].alias("device_type"),
        c["browser"].alias("browser"),
        c["os"].alias("os"),
        (c["device_type"] == "bot").alias("is_bot"),
    )
