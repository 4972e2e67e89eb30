"""The README's cluster flow on kind: `make kind-up`, then `make k8s-demo` with files and
with Kafka, each printing the top tables read back through the metastore."""

from __future__ import annotations

import re

import pytest

from tests.e2e.kind import Kind

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def top_tables(out: str) -> list[str]:
    """The demo's table headers and IP rows (dotted quads) it printed."""
    return [ln for ln in out.splitlines() if re.search(r"\b\d{1,3}(\.\d{1,3}){3}\b", ln)]


@pytest.mark.parametrize("source", ["files", "kafka"])
def test_the_demo_prints_the_top_tables(kind: Kind, source: str) -> None:
    proc = kind.make("k8s-demo", f"K8S_DEMO_SOURCE={source}")
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    rows = top_tables(proc.stdout)
    assert len(rows) >= 5, proc.stdout[-3000:]
