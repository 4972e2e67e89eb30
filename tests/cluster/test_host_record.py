"""`cluster down` on a host with no iptables tables before `up`, while another program (as
podman's netavark does for `k8s-deploy`'s image builds) makes tables and rules of its own
(#55): the cluster's chains, rules and empty tables go, the other program's stay and are
named as information, and down succeeds. A host record kept by a failed down is merged
with the host as it is at the next `up`, so what other programs made since is theirs.

The scenario (tests/cluster/host_scenario.py) runs in a network and mount namespace of its
own (`unshare`), with `up`'s and `down`'s real host functions. The whole cluster's down
with a foreign table is in test_cluster_down.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.cluster]

# A new network namespace has no iptables table; sysfs mounted in it shows its own links.
IN_OWN_NETNS = "mount -t sysfs sysfs /sys && ip link set lo up && " + (
    'exec "$0" -m tests.cluster.host_scenario "$1"'
)


def scenario(home: Path) -> dict[str, Any]:
    for tool in ("unshare", "iptables", "nft"):
        assert shutil.which(tool), f"{tool} is missing (.ci/run installs it)"
    env = {**os.environ, "LOGBERG_CLUSTER_HOME": str(home), "LOGBERG_CLUSTER_BRIDGE": "lbt0"}
    r = subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", IN_OWN_NETNS,
         sys.executable, str(home)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(json.loads(r.stdout))


def cluster_lines(rules: dict[str, list[str]]) -> list[str]:
    return [
        ln
        for lines in rules.values()
        for ln in lines
        if any(k in ln for k in ("KUBE-", "LOGBERG-", "logberg-cluster"))
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="iptables in a namespace of its own needs root")
def test_down_leaves_another_programs_tables_and_succeeds(tmp_path: Path) -> None:
    out = scenario(tmp_path / "cluster")
    assert out["before"] == {}, "the namespace starts with no iptables table"
    assert out["recorded_tables"] == [] and out["first_record_merged"] is False
    assert {"filter", "nat", "mangle"} <= set(out["during"]), out["during"]
    # down: nothing of the cluster's failed to go; the tables netavark filled are named
    assert out["failures"] == [], out["failures"]
    assert len(out["info"]) == 2, out["info"]
    for table, note in zip(("filter", "nat"), sorted(out["info"]), strict=True):
        assert note.startswith(f"iptables table {table} appeared while the cluster ran"), note
        assert "podman's netavark" in note and note.endswith("left as it is"), note
    after = out["after"]
    assert cluster_lines(after) == [], cluster_lines(after)
    assert "mangle" not in after, "the table only the cluster used is deleted"
    for rule in out["other_rules"]:
        assert any(rule in lines for lines in after.values()), (rule, after)
    assert out["bridge_left"] is False
    # a kept record, merged at the next up: the table made after it is the host's
    assert out["second_record_merged"] is True
    assert {"iptables:filter", "iptables:nat", "iptables:raw"} <= set(out["merged_tables"])
    assert out["second_failures"] == [] and out["second_info"] == [], out["second_info"]
    assert out["later_rule"] in out["final"]["raw"]
    assert cluster_lines(out["final"]) == []
