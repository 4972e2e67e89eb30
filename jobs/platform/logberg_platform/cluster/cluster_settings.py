"""Settings of the local cluster, from environment variables (each has a default)."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ConfigError

NETPOL_METRICS_PORT = 10265  # the NetworkPolicy enforcer's metrics, on 127.0.0.1

# Ports the components bind besides the two settings below; fixed, so `up` checks them.
FIXED_PORTS = {
    10248: "kubelet healthz",
    10250: "kubelet",
    10249: "kube-proxy metrics",
    10256: "kube-proxy healthz",
    10257: "kube-controller-manager",
    10259: "kube-scheduler",
    NETPOL_METRICS_PORT: "kube-network-policies metrics",
}


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a port number, got {raw!r}") from None
    if not 1 <= value <= 65535:
        raise ConfigError(f"{name} must be a port number (1-65535), got {value}")
    return value


def _net(name: str, default: str) -> ipaddress.IPv4Network:
    raw = os.environ.get(name, default)
    try:
        net = ipaddress.ip_network(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an IPv4 CIDR such as {default}, got {raw!r}") from None
    if not isinstance(net, ipaddress.IPv4Network) or not net.is_private:
        raise ConfigError(f"{name} must be a private IPv4 range, got {raw!r}")
    if net.prefixlen > 22:
        raise ConfigError(f"{name} must be /22 or larger, got {raw!r}")
    return net


@dataclass(frozen=True)
class ClusterSettings:
    home: Path  # all state: certs, configs, logs, pid files, etcd, containerd, kubelet
    context: str  # kubeconfig context (and cluster/user) name
    api_port: int
    etcd_port: int  # client port; the peer port is etcd_port + 1
    pod_cidr: ipaddress.IPv4Network  # cluster-wide pod range
    service_cidr: ipaddress.IPv4Network
    bridge: str  # the CNI bridge this cluster owns
    node_name: str
    tools: Path  # binary cache root (LOGBERG_TOOLS)

    @classmethod
    def from_env(cls) -> ClusterSettings:
        logberg_home = Path(os.environ.get("LOGBERG_HOME", ".logberg"))
        home = Path(os.environ.get("LOGBERG_CLUSTER_HOME", str(logberg_home / "cluster")))
        bridge = os.environ.get("LOGBERG_CLUSTER_BRIDGE", "lbk0")
        if not re.fullmatch(r"[a-z][a-z0-9]{1,11}", bridge):
            raise ConfigError(
                f"LOGBERG_CLUSTER_BRIDGE must be 2-12 lowercase letters/digits, got {bridge!r}"
            )
        context = os.environ.get("LOGBERG_CLUSTER_CONTEXT", "logberg-local")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", context):
            raise ConfigError(f"LOGBERG_CLUSTER_CONTEXT is not a valid name: {context!r}")
        node = os.environ.get("LOGBERG_CLUSTER_NODE", "logberg-node")
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", node):
            raise ConfigError(f"LOGBERG_CLUSTER_NODE must be a DNS label, got {node!r}")
        settings = cls(
            home=home.resolve(),
            context=context,
            api_port=_int("LOGBERG_CLUSTER_API_PORT", 6443),
            etcd_port=_int("LOGBERG_CLUSTER_ETCD_PORT", 2379),
            pod_cidr=_net("LOGBERG_CLUSTER_POD_CIDR", "10.244.0.0/16"),
            service_cidr=_net("LOGBERG_CLUSTER_SERVICE_CIDR", "10.96.0.0/16"),
            bridge=bridge,
            node_name=node,
            tools=Path(os.environ.get("LOGBERG_TOOLS", ".tools")).resolve(),
        )
        if settings.pod_cidr.overlaps(settings.service_cidr):
            raise ConfigError(
                "LOGBERG_CLUSTER_POD_CIDR and LOGBERG_CLUSTER_SERVICE_CIDR overlap: "
                f"{settings.pod_cidr} / {settings.service_cidr}"
            )
        if settings.etcd_port + 1 == settings.api_port or settings.etcd_port == settings.api_port:
            raise ConfigError(
                "LOGBERG_CLUSTER_ETCD_PORT (and +1 for etcd's peer port) must differ from "
                "LOGBERG_CLUSTER_API_PORT"
            )
        # The control socket path must fit a sockaddr_un (108 bytes).
        if len(str(settings.containerd_socket)) > 100:
            raise ConfigError(
                f"LOGBERG_CLUSTER_HOME is too long for a unix socket path: {settings.home}"
            )
        return settings

    # -- derived addresses ----------------------------------------------------------------

    @property
    def node_subnet(self) -> ipaddress.IPv4Network:
        """The node's pod /24: the first one, which kube-controller-manager assigns it."""
        return next(self.pod_cidr.subnets(new_prefix=24))

    @property
    def node_ip(self) -> str:
        """The bridge's address: the pods' gateway, the node IP and the apiserver address."""
        return str(self.node_subnet.network_address + 1)

    @property
    def api_service_ip(self) -> str:
        return str(self.service_cidr.network_address + 1)

    @property
    def dns_ip(self) -> str:
        return str(self.service_cidr.network_address + 10)

    @property
    def server(self) -> str:
        return f"https://{self.node_ip}:{self.api_port}"

    @property
    def cni_network(self) -> str:
        """CNI network name: names our IPAM and result-cache files."""
        return f"logberg-{self.bridge}"

    # -- paths ----------------------------------------------------------------------------

    @property
    def pki(self) -> Path:
        return self.home / "pki"

    @property
    def conf(self) -> Path:
        return self.home / "conf"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def run(self) -> Path:
        return self.home / "run"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig users export."""
        return self.home / "kubeconfig"

    @property
    def containerd_root(self) -> Path:
        return self.home / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.home / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.home / "containerd" / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.home / "kubelet"

    @property
    def volumes(self) -> Path:
        """The node's directories for dev data that outlive a pod (hostPath volumes; the
        cluster has no provisioner): made by the deploy, kept by `down` as etcd's data is,
        removed with the home (`down --purge`)."""
        return self.home / "volumes"

    @property
    def host_record(self) -> Path:
        """What `up` changed on the host (sysctls, chains, links), for `down` to undo."""
        return self.home / "host-record.json"
