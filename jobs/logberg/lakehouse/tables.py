"""Creating logberg's tables (from `schema`) and keeping old tables' properties current."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import partial

from pyspark.sql import SparkSession

from logberg.lakehouse import sql
from logberg.lakehouse.parallel import concurrently
from logberg.lakehouse.schema import (
    DATABASE,
    NO_DICTIONARY_PROP,
    Column,
    Table,
    no_dictionary,
    properties_sql,
)
from logberg.lakehouse.session import CATALOG


def qualified(spark: SparkSession, table: Table | str) -> str:
    """`catalog.nginx_logs.t` in the session's current catalog (for DataFrameWriterV2)."""
    return f"{spark.catalog.currentCatalog()}.{table}"


def ensure_database(spark: SparkSession) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{DATABASE}")


def existing(spark: SparkSession) -> set[str]:
    """Names of the tables in the namespace (one SHOW TABLES: jobs run this at start)."""
    rows = spark.sql(f"SHOW TABLES IN {CATALOG}.{DATABASE}").collect()
    return {r.tableName for r in rows if not r.isTemporary}


def table_properties(spark: SparkSession, table: Table | str) -> dict[str, str]:
    """The table's properties as stored. SHOW TBLPROPERTIES hides the value of every key
    that matches spark.sql.redaction.options.regex (default `(?i)url`: our `...column.url`
    keys), so that is lifted for this one statement; Spark's secret pattern still applies."""
    key = "spark.sql.redaction.options.regex"
    before = spark.conf.get(key)
    spark.conf.set(key, "(?!)")  # matches nothing
    try:
        rows = spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
    finally:
        # As it was: unset (Spark's default) unless the session had set another value. A
        # session a job command hands on (connect_pool) keeps no setting of its own.
        spark.conf.unset(key)
        if before is not None and spark.conf.get(key) != before:
            spark.conf.set(key, before)
    return {r.key: r.value for r in rows}


def upgrade(spark: SparkSession, table: Table) -> None:
    """Bring a table made by an older logberg to today's definition: columns added since
    (nullable, at the end: Iceberg schema evolution, no data rewritten) and today's write
    properties."""
    columns = set(spark.table(qualified(spark, table)).columns)
    added = [c for c in table.columns if c.name not in columns]
    if added:
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({', '.join(c.ddl() for c in added)})")
    columns |= {c.name for c in added}
    have = table_properties(spark, table)
    want = {**table.all_properties(), **no_dictionary(columns)}
    missing = {k: v for k, v in want.items() if have.get(k) != v}
    if missing:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({properties_sql(missing)})")
    # Older logberg set the dictionary property of format columns the table may not have.
    stale = [
        k
        for k in have
        if k.startswith(NO_DICTIONARY_PROP) and k.removeprefix(NO_DICTIONARY_PROP) not in columns
    ]
    if stale:
        spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES IF EXISTS ({sql.literals(stale)})")
    if have.get("sort-order", "[]") not in ("", "[]"):
        spark.sql(f"ALTER TABLE {qualified(spark, table)} WRITE UNORDERED")


def add_columns(spark: SparkSession, table: Table, columns: Iterable[Column]) -> list[str]:
    """Add these nullable columns where missing (schema evolution: at the end, no rewrite);
    returns every column of the live table beyond `table`'s definition, in table order."""
    have = spark.table(qualified(spark, table)).columns
    missing = {c.name: c for c in columns if c.name not in have}
    if missing:
        ddl = ", ".join(replace(c, name=sql.identifier(c.name)).ddl() for c in missing.values())
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS ({ddl})")
        have = [*have, *missing]
        props = no_dictionary(missing)
        if props:
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({properties_sql(props)})")
    known = set(table.names)
    return [c for c in have if c not in known]


def ensure(
    spark: SparkSession, tables: Iterable[Table], upgrading: Iterable[Table] = ()
) -> set[str]:
    """Create the tables that are missing (returns their names); bring those in `upgrading`
    that exist to today's properties."""
    ensure_database(spark)
    have = existing(spark)
    check = {t.name for t in upgrading}
    missing = []
    for table in tables:
        if table.name not in have:
            missing.append(table)
        elif table.name in check:
            upgrade(spark, table)
    # Each CREATE is a metastore round trip and a metadata file: the missing tables (all
    # of them, on a new warehouse) are created at once.
    concurrently([partial(spark.sql, t.create_sql(CATALOG)) for t in missing], "create")
    return {t.name for t in missing}
