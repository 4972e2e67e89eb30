"""`logberg cluster down` stops every process and undoes every host change `up` made
(the host as it was is recorded in the cluster's home before `up`). Runs last of the bare
cluster's files in a whole run; alone, it brings the cluster up first."""

from __future__ import annotations

import subprocess

import pytest

from tests.cluster.framework import (
    Cluster,
    host_picture,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_down_leaves_the_host_as_it_was(cluster: Cluster) -> None:
    """Runs last: `down` stops every process and undoes every host change `up` made."""
    proc = cluster.cli("down", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = host_picture()
    for key, value in cluster.before.items():
        now = after[key]
        if isinstance(value, list) and isinstance(now, list):
            gone, new = sorted(set(value) - set(now)), sorted(set(now) - set(value))
            assert (gone, new) == ([], []), f"{key} after down: missing {gone}, extra {new}"
        assert after[key] == value, f"{key} differs after down"
    leftovers = subprocess.run(["pgrep", "-af", str(cluster.home)], capture_output=True, text=True)
    assert leftovers.stdout == "", leftovers.stdout
    assert not (cluster.home / "host-record.json").exists()
