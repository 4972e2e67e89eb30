"""The cluster files' order when the whole tier runs (conftest.py sorts by it; each file
also runs alone), kept apart from the fixtures so that `make test`'s lanes
(tests/helpers/lanes.py) read it without importing them."""

from __future__ import annotations

# The files in the order of the story they were cut from; each one runs alone too.
ORDER = (
    "test_cluster_node",
    "test_cluster_dns",
    "test_cluster_workloads",
    "test_cluster_network",
    "test_cluster_network_policy",
    "test_cluster_webhook",
    "test_cluster_operator_missing",
    "test_host_record",  # down and up in a namespace of its own
    "test_cluster_down",  # takes the bare cluster down: last of it
    "test_demo",
    "test_network_policies",
    "test_history_server",
    "test_cluster_metrics",
    "test_report_job",
    "test_hardening",
    "test_faults",
    "test_schedule",
    "test_rotation",
    "test_upgrade",
    "test_submit",
    "test_spark_connect",
    "test_doctor_k8s",
    "test_kafka_stream",  # rows beside the landing's: after the files that count those
    "test_demo_again",  # empties the dev S3 store
    "test_uninstall",  # uninstalls: last of all
)
# The bare cluster's files: ORDER up to the one that takes it down. They deploy nothing and
# need nothing `make setup` makes (tests/unit/test_lanes.py checks their fixtures).
BARE = ORDER[: ORDER.index("test_cluster_down") + 1]
