"""Entry point for spark-submit / SparkApplications: `spark_entry.py ingest --input …`.

The same `logberg` subcommands as on a laptop; the session factory takes the catalog,
warehouse and S3 settings from the Spark conf the SparkApplication sets.
"""

import sys

from logberg.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
