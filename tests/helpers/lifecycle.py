"""Create, INSERT, MERGE INTO and time-travel through the metastore; prints JSON results."""

import json
import sys

from logberg.lakehouse.tables import ensure_database
from logberg_platform.local import session as build_session


def main() -> None:
    table = sys.argv[1]
    spark = build_session("lifecycle")
    ensure_database(spark)
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, v STRING) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    first = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at")
    snapshot = first.collect()[-1][0]
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 3, 'c') s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    now = [tuple(r) for r in spark.sql(f"SELECT id, v FROM {table} ORDER BY id").collect()]
    then = [
        tuple(r)
        for r in spark.sql(
            f"SELECT id, v FROM {table} VERSION AS OF {snapshot} ORDER BY id"
        ).collect()
    ]
    print(json.dumps({"now": now, "then": then}))
    spark.stop()


if __name__ == "__main__":
    main()
