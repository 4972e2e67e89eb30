"""Cluster add-ons applied by `up`: CoreDNS (Deployment + the kube-dns Service).

CoreDNS serves only the cluster's own zones: its Corefile names no forward plugin (the
binary has one, for kubeadm's Corefile on kind), so a name outside cluster.local is refused
instead of being sent to a resolver off the machine.
"""

from __future__ import annotations

import json

from logberg_platform.cluster.cluster_settings import ClusterSettings
from logberg_platform.cluster.config import CLUSTER_DOMAIN

NAMESPACE = "kube-system"
LABELS = {"k8s-app": "kube-dns"}


def corefile() -> str:
    zones = f"{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53"
    return f"""{zones} {{
    errors
    health {{
        lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    cache 30
    loop
    reload
    loadbalance
}}
"""


def coredns_manifests(s: ClusterSettings, image: str) -> str:
    """The CoreDNS objects as a JSON List for `kubectl apply -f -`."""
    meta = {"name": "coredns", "namespace": NAMESPACE}
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:coredns",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"Corefile": corefile()},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "labels": LABELS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": LABELS},
                "template": {"metadata": {"labels": LABELS}, "spec": _pod_spec(image)},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": NAMESPACE, "labels": LABELS},
            "spec": {
                "selector": LABELS,
                "clusterIP": s.dns_ip,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1)


def _pod_spec(image: str) -> dict[str, object]:
    return {
        "serviceAccountName": "coredns",
        "priorityClassName": "system-cluster-critical",
        # The kubelet's resolvConf is empty: CoreDNS has no upstream resolver at all.
        "dnsPolicy": "Default",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            # Port 53 without any capability (a namespaced, "safe" sysctl).
            "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "53"}],
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumes": [
            {
                "name": "config",
                "configMap": {
                    "name": "coredns",
                    "items": [{"key": "Corefile", "path": "Corefile"}],
                },
            }
        ],
        "containers": [
            {
                "name": "coredns",
                "image": image,
                "imagePullPolicy": "Never",
                "args": ["-conf", "/etc/coredns/Corefile"],
                "ports": [
                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                ],
                "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": True}],
                "resources": {
                    "requests": {"cpu": "50m", "memory": "32Mi"},
                    "limits": {"memory": "128Mi"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "livenessProbe": {
                    "httpGet": {"path": "/health", "port": 8080},
                    "initialDelaySeconds": 10,
                    "periodSeconds": 10,
                },
                "readinessProbe": {
                    "httpGet": {"path": "/ready", "port": 8181},
                    "periodSeconds": 2,
                },
            }
        ],
    }
