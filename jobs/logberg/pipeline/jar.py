"""logberg's own jar (jobs/logberg/java), reached only the ways Spark Connect allows too:
SQL `reflect` of its static methods, its data sources and its Java functions. No py4j: the
same calls work in a classic session and over Spark Connect, where the JVM is the server's.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from logberg.errors import ConfigError

# What each session already asked or registered: a session's functions stay registered
# (registering again logs a warning), and a static value does not change.
_values: WeakKeyDictionary[SparkSession, dict[tuple[str, str], str]] = WeakKeyDictionary()
_functions: WeakKeyDictionary[SparkSession, set[str]] = WeakKeyDictionary()
# Sessions whose queries have reached a class of the jar: no need to ask again.
_present: WeakKeyDictionary[SparkSession, bool] = WeakKeyDictionary()


def missing(cls: str) -> ConfigError:
    return ConfigError(
        f"{cls} is not on the Spark class path: run `make setup` (local), or use the logberg "
        "Spark image (images/spark), which has it in /opt/spark/jars"
    )


def static_value(spark: SparkSession, cls: str, method: str) -> str:
    """What the static method `cls.method()` returns (a String), by SQL `reflect`; once per
    session. A clear error when the class is not on the class path."""
    memo = _values.setdefault(spark, {})
    if (cls, method) not in memo:
        try:
            row = spark.range(1).select(F.reflect(F.lit(cls), F.lit(method))).first()
        except AnalysisException as e:
            if cls in str(e):
                raise missing(cls) from None
            raise
        assert row is not None  # one row in, one row out
        memo[(cls, method)] = str(row[0])
    return memo[(cls, method)]


def require(spark: SparkSession) -> None:
    """logberg's jar is on the session's class path, or a clear error (asked once, unless a
    query of this session has used one of its classes already: `found`)."""
    if spark not in _present:
        static_value(spark, "dev.logberg.ParseLine", "returnType")
        _present[spark] = True


def found(spark: SparkSession) -> None:
    """A query of this session used a class of the jar: `require` has nothing to ask."""
    _present[spark] = True


def register_function(spark: SparkSession, name: str, cls: str) -> None:
    """Make the Java UDF `cls` callable as `name` in this session, once; its return type is
    its static `returnType()`."""
    done = _functions.setdefault(spark, set())
    if name in done:
        return
    spark.udf.registerJavaFunction(name, cls, static_value(spark, cls, "returnType"))
    done.add(name)
