"""`make kind-down` removes the cluster and gives the host back as `make kind-up` found it:
the same firewall rules, links, mounts and listening ports, and nothing of the cluster's
(node container, volume, network) left. Runs last (conftest.py); alone, it brings a bare
cluster up first."""

from __future__ import annotations

import pytest

from tests.e2e.kind import BEFORE, Kind, host_picture

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_kind_down_leaves_the_host_as_it_was() -> None:
    k = Kind()
    before = BEFORE.get("host")
    if before is None or not k.running():
        assert k.make("kind-down").returncode == 0  # whatever ran before this file
        before = host_picture()
        up = k.logberg("kind", "up", "--name", k.name)
        assert up.returncode == 0, f"{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    assert k.running()
    assert host_picture() != before, "the cluster changed nothing on the host: a blind check"
    down = k.make("kind-down")
    assert down.returncode == 0, f"{down.stdout[-3000:]}\n{down.stderr[-3000:]}"
    assert "nothing of it is left on this host" in down.stdout
    after = host_picture()
    for what in before:
        assert after[what] == before[what], what
    again = k.make("kind-down")  # nothing left: still 0
    assert again.returncode == 0, again.stdout
