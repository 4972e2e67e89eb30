"""Fixtures of the end-to-end tests on kind (tests/e2e): one file per feature, each able to
run alone. `kind` is the cluster with logberg deployed (`make kind-up`), reused when it
runs; the session takes it down at its end (`make kind-down`) unless
LOGBERG_TEST_KEEP_CLUSTER=1. test_kind_down.py runs last."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.kind import BEFORE, KEEP, Kind, host_picture


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    last = [i for i in items if i.path.parent == here and i.path.stem == "test_kind_down"]
    for item in last:
        items.remove(item)
        items.append(item)


@pytest.fixture(scope="session")
def kind() -> Iterator[Kind]:
    cluster = Kind()
    if not cluster.running():
        BEFORE["host"] = host_picture()
    proc = cluster.make("kind-up")
    assert proc.returncode == 0, (
        f"make kind-up exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    yield cluster
    if not KEEP:
        cluster.make("kind-down")
