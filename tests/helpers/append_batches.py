"""A writer process for the concurrency test: append N one-row batches to a table."""

import sys

from logberg_platform.local import session as build_session


def main() -> None:
    writer, batches, table = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    spark = build_session(f"writer-{writer}")
    for batch in range(batches):
        spark.sql(f"INSERT INTO {table} VALUES ('{writer}', {batch})")
    spark.stop()
    print(f"writer {writer} done")


if __name__ == "__main__":
    main()
