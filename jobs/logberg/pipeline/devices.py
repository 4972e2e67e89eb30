"""Device class, browser and OS of the user agent, on the JVM (no Python UDF).

ua-parser (uap-core's maintained rules, through its JVM port) gives the browser, OS and
device families; logberg's rules (jobs/logberg/java/dev/logberg/agents.rules) put its own
bot and app markers on top and map the families to a device class: bot, tablet, mobile,
desktop or other. `dev.logberg.ClassifyAgent` is the Java UDF; each distinct agent is
parsed once per JVM, so the cost grows with distinct agents, not with lines.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from logberg.pipeline import jar

AGENT_UDF = "logberg_classify_agent"
AGENT_CLASS = "dev.logberg.ClassifyAgent"


def register(spark: SparkSession) -> None:
    """Make the JVM classifier callable as `AGENT_UDF` in this session, once (registering
    again logs a warning); a clear error when logberg's jar is not on the class path."""
    jar.register_function(spark, AGENT_UDF, AGENT_CLASS)


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
