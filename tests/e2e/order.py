"""The end-to-end files' order when the whole tier runs (conftest.py sorts by it; each file
also runs alone), kept apart from the fixtures so that `make test`'s lanes
(tests/helpers/lanes.py) read it without importing them."""

from __future__ import annotations

# The files in the order of the story they were cut from; each one runs alone too.
ORDER = (
    "test_demo",
    "test_network_policies",
    "test_history_server",
    "test_metrics",
    "test_report_job",
    "test_hardening",
    "test_faults",
    "test_schedule",
    "test_rotation",
    "test_upgrade",
    "test_submit",
    "test_spark_connect",
    "test_doctor_k8s",
    "test_kind_sql_and_ui",
    "test_kafka_stream",  # rows beside the landing's: after the files that count those
    "test_kind_demo",  # the Kafka demo: its rows too
    "test_demo_again",  # empties the dev S3 store
    "test_uninstall",  # uninstalls
    "test_kind_down",  # takes the cluster down: last of all
)
