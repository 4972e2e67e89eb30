"""`logberg doctor`: check each piece of the lakehouse and say what to fix.

The runtime's checks are the ones every environment shares, a cluster pod's included (the
release's toolbox runs them for `logberg doctor --k8s`): the metastore answers a real thrift
call; it takes and releases the lock Iceberg takes around each commit; the warehouse takes a
write, a read and a delete; every Iceberg table of `nginx_logs` has its current metadata
file. The platform tooling adds the local metastore database's checks (PostgreSQL through
psycopg2: reachable, the pinned Hive's schema, the lock tables) and `--k8s`
(logberg_platform.doctor). Each failure says what was found and names the setting (or the
table and file) to fix. Exit 0 when no check failed (a skipped check is not a failure).
"""
