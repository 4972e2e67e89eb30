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


# Another program's table, made while the cluster runs (#55): a table the host had not
# before `up` (the cluster never uses `raw`), with a chain and a rule, as podman's netavark
# makes `filter` and `nat` when images are built while the cluster runs.
FOREIGN_TABLE = "raw"
FOREIGN_CHAIN = "OTHER-PROGRAM"
FOREIGN_RULE = f"-A {FOREIGN_CHAIN} -s 192.0.2.0/24 -j ACCEPT"


def ipt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["iptables", "-w", "5", "-t", FOREIGN_TABLE, *args], capture_output=True, text=True
    )


def test_down_leaves_the_host_as_it_was(cluster: Cluster) -> None:
    """Runs last: `down` stops every process and undoes every host change `up` made; a
    table another program made meanwhile is left as it is, said, and down succeeds."""
    rules = cluster.before["rules"]
    assert isinstance(rules, list) and f"*{FOREIGN_TABLE}" not in rules, "the host has a raw table"
    for args in (
        ["-N", FOREIGN_CHAIN],
        FOREIGN_RULE.split(),
        ["-A", "PREROUTING", "-j", FOREIGN_CHAIN],
    ):
        made = ipt(*args)
        assert made.returncode == 0, made.stderr
    try:
        proc = cluster.cli("down", timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"note: iptables table {FOREIGN_TABLE} appeared while the cluster ran" in (
            proc.stdout
        ), proc.stdout[-3000:]
        assert FOREIGN_RULE in ipt("-S").stdout.splitlines()
    finally:  # the other program ends: its table goes
        ipt("-F")
        ipt("-X", FOREIGN_CHAIN)
        subprocess.run(["nft", "delete", "table", "ip", FOREIGN_TABLE], capture_output=True)
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
