"""CoreDNS in the local cluster: Services resolve from a pod, outside names do not."""

from __future__ import annotations

import re

import pytest

from tests.cluster.framework import (
    Cluster,
    _ns_phase,
    pod,
    run_pod,
    unique,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_services_resolve_through_coredns_from_a_pod(cluster: Cluster, probe_image: str) -> None:
    ns = unique("dns")
    cluster.kubectl("create", "namespace", ns)
    # A ClusterIP Service and a headless one, both selecting a long-running pod.
    backend = pod("backend", probe_image, ["sleep", "3600"])
    backend["metadata"] = {"name": "backend", "namespace": ns, "labels": {"app": "backend"}}
    cluster.apply(backend)
    for name, cluster_ip in (("web", None), ("web-headless", "None")):
        spec: dict[str, object] = {
            "selector": {"app": "backend"},
            "ports": [{"port": 80, "targetPort": 8080}],
        }
        if cluster_ip:
            spec["clusterIP"] = cluster_ip
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": ns},
                "spec": spec,
            }
        )
    wait_until("backend pod running", lambda: _ns_phase(cluster, ns, "backend") == "Running")
    web_ip = cluster.kubectl("-n", ns, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
    pod_ip = cluster.kubectl("-n", ns, "get", "pod", "backend", "-o", "jsonpath={.status.podIP}")
    script = (
        f"getent hosts web.{ns}.svc.cluster.local; "
        f"getent hosts web-headless.{ns}.svc.cluster.local; "
        # A ClusterIP with endpoints answers TCP from a pod: the apiserver through its Service.
        "bash -c 'exec 3<>/dev/tcp/kubernetes.default.svc.cluster.local/443' && echo api-reached"
    )
    status, log = run_pod(cluster, probe_image, ["sh", "-c", script])
    assert status == "Succeeded", log
    assert re.search(rf"^{re.escape(web_ip)}\s+web\.{ns}\.svc\.cluster\.local$", log, re.M), log
    assert re.search(rf"^{re.escape(pod_ip)}\s+web-headless\.{ns}", log, re.M), log
    assert "api-reached" in log
    cluster.kubectl("delete", "namespace", ns, "--wait=false")


def test_coredns_refuses_names_outside_the_cluster(cluster: Cluster, probe_image: str) -> None:
    status, log = run_pod(
        cluster,
        probe_image,
        ["sh", "-c", "getent hosts example.com && echo RESOLVED; cat /etc/resolv.conf; echo done"],
    )
    assert status == "Succeeded", log
    assert "RESOLVED" not in log and "done" in log
    assert "nameserver" in log
