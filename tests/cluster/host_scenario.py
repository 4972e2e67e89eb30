"""Run inside a network (and mount) namespace of its own, with sysfs mounted for it: the
host changes of the cluster's `up` and its `down`, on a host with no iptables tables,
while another program (podman's netavark, as `k8s-deploy`'s image builds do) makes tables
and rules of its own. Prints what it saw as JSON (tests/cluster/test_host_record.py).

`up`'s own network changes are the real ones (`host.setup_network`, `enforce_policies`);
the kubelet's and kube-proxy's chains are made as they make them, with iptables.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from logberg_platform.cluster import host
from logberg_platform.cluster.cluster_settings import ClusterSettings


def ipt(*args: str) -> None:
    subprocess.run(["iptables", "-w", "5", *args], check=True, capture_output=True)


def kube_chains() -> None:
    """What the kubelet and kube-proxy add (iptables mode), in filter and nat."""
    ipt("-t", "filter", "-N", "KUBE-FIREWALL")
    ipt("-t", "filter", "-A", "INPUT", "-j", "KUBE-FIREWALL")
    ipt("-t", "filter", "-N", "KUBE-FORWARD")
    forward = ["-m", "comment", "--comment", "kubernetes forwarding rules", "-j", "KUBE-FORWARD"]
    ipt("-t", "filter", "-A", "FORWARD", *forward)
    ipt("-t", "nat", "-N", "KUBE-SERVICES")
    ipt("-t", "nat", "-A", "PREROUTING", "-j", "KUBE-SERVICES")
    ipt("-t", "nat", "-A", "OUTPUT", "-j", "KUBE-SERVICES")
    ipt("-t", "nat", "-N", "KUBE-POSTROUTING")
    ipt("-t", "nat", "-A", "POSTROUTING", "-j", "KUBE-POSTROUTING")
    ipt("-t", "nat", "-A", "KUBE-POSTROUTING", "-j", "MASQUERADE")


def other_program(table: str, chain: str, hook: str) -> str:
    """A chain with a rule, and a jump to it, as netavark makes them. Returns the rule."""
    ipt("-t", table, "-N", chain)
    ipt("-t", table, "-A", chain, "-d", "10.88.0.0/16", "-j", "ACCEPT")
    ipt("-t", table, "-A", hook, "-j", chain)
    return f"-A {chain} -d 10.88.0.0/16 -j ACCEPT"


def tables() -> dict[str, list[str]]:
    return host.save_rules("iptables")


def main(home: str) -> None:
    s = ClusterSettings.from_env()
    assert s.home == Path(home).resolve(), (s.home, home)
    out: dict[str, object] = {"before": tables()}
    # up: the record, then the cluster's network; netavark builds an image meanwhile
    record, merged = host.record_host(s)
    out["recorded_tables"], out["first_record_merged"] = record.tables, merged
    host.setup_network(s)
    host.enforce_policies(s, 100)
    kube_chains()
    out["other_rules"] = [
        other_program("filter", "NETAVARK_FORWARD", "FORWARD"),
        other_program("nat", "NETAVARK-HOSTPORT-DNAT", "PREROUTING"),
    ]
    out["during"] = tables()
    # down
    notes = host.teardown_network(s, record)
    out["failures"], out["info"] = notes.failures, notes.info
    out["after"] = tables()
    out["bridge_left"] = host.link_exists(s.bridge)
    # The record stays (as after a down that failed: teardown alone keeps it), and another
    # program makes a table after it: the next `up` merges, so the next `down` takes the
    # table for the host's.
    assert s.host_record.exists()
    later = other_program("raw", "OTHER-PROGRAM", "PREROUTING")
    again, merged = host.record_host(s)
    out["second_record_merged"], out["merged_tables"] = merged, again.tables
    host.setup_network(s)
    notes = host.teardown_network(s, again)
    out["second_failures"], out["second_info"] = notes.failures, notes.info
    out["later_rule"], out["final"] = later, tables()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
