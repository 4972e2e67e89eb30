"""Small DataFrames of Python rows (run records, ledger entries), built on the JVM.

`createDataFrame` pickles the rows and starts a Python worker to read them back: about 1 s
in a fresh process, once per job run that records itself (bench/README.md). Literal
rows need no worker; past `LITERAL_ROWS` the plan would grow large, so those batches still
go through createDataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

LITERAL_ROWS = 256


def rows_frame(
    spark: SparkSession, rows: Sequence[Sequence[object]], schema: StructType
) -> DataFrame:
    """These rows as a DataFrame with `schema` (values as createDataFrame takes them)."""
    fields = schema.fields
    for row in rows:
        if len(row) != len(fields):
            raise ValueError(f"a row of {len(row)} values for {len(fields)} columns: {row!r}")
    if len(rows) > LITERAL_ROWS:
        return spark.createDataFrame(list(rows), schema)
    if not rows:
        return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in fields])
    structs = [
        F.struct(
            *[F.lit(v).cast(f.dataType).alias(f.name) for v, f in zip(row, fields, strict=True)]
        )
        for row in rows
    ]
    return spark.range(1).select(F.inline(F.array(*structs)))
