"""The README's cluster flow with Kafka on kind: `make k8s-demo K8S_DEMO_SOURCE=kafka` (the
files demo is the session's own, checked by test_demo.py) prints the top tables, read
back through the metastore."""

from __future__ import annotations

import re

import pytest

from tests.e2e.framework import EXAMPLES, Deployed

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def top_tables(out: str) -> list[str]:
    """The IP rows (dotted quads) the demo printed."""
    return [ln for ln in out.splitlines() if re.search(r"\b\d{1,3}(\.\d{1,3}){3}\b", ln)]


def test_the_kafka_demo_prints_the_top_tables(deployed: Deployed) -> None:
    try:
        out = deployed.make("k8s-demo", "K8S_DEMO_SOURCE=kafka")
        assert len(top_tables(out)) >= 5, out[-3000:]
        assert "the stream goes on: kubectl delete -f" in out, out[-2000:]
    finally:  # what the demo says stops it, and its generator Job
        for example in ("streaming", "generate"):
            deployed.k(
                "delete", "-f", str(EXAMPLES / "kafka" / f"{example}.yaml"), "--ignore-not-found",
                "--wait", "--timeout=300s",
            )  # fmt: skip
