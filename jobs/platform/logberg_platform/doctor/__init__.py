"""The platform tooling's `logberg doctor`: the runtime's lakehouse checks (logberg.doctor)
with this home's hints, the local metastore database's checks (PostgreSQL through psycopg2:
reachable, the pinned Hive's schema, the lock tables Iceberg's commit locks need), and
`--k8s`: a release on a cluster, through the API and then the runtime's checks inside the
release's toolbox pod. It replaces the runtime's `doctor` command when installed."""

from logberg_platform.doctor.diagnose import add_arguments, diagnose, on_cluster, run
from logberg_platform.doctor.local_context import LOCK_TABLES, PASSWORD_ENV, LocalContext

__all__ = [
    "LOCK_TABLES",
    "PASSWORD_ENV",
    "LocalContext",
    "add_arguments",
    "diagnose",
    "on_cluster",
    "run",
]
