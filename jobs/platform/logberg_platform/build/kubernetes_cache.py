"""Where the kind node image's binaries are: Kubernetes, etcd, CoreDNS and the NetworkPolicy
enforcer (kube-network-policies) at the pinned versions, in the versioned cache
`logberg setup kubernetes` (logberg_platform.build.kubernetes_binaries, run by `make
kind-node-image`) fills, and kubectl: the one `make tools` installs from its pinned wheel
(versions.toml [tools].kubectl_wheel, the cluster's minor), not built again with the server.
Found here, never built here."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ConfigError
from logberg.versions import KubePins, pins
from logberg_platform.setup_artifacts import kubectl_path

KUBE_COMMANDS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "kubeadm",  # kind runs `kubeadm init` in the node
)
# Plugins compiled into CoreDNS; their order in the Corefile is CoreDNS's own
# (dnsserver.Directives), not this tuple's.
COREDNS_PLUGINS = (
    "errors",
    "health",
    "ready",
    "kubernetes",
    # `prometheus` (this package) and forward: kubeadm's Corefile, which kind's CoreDNS reads
    "metrics",
    "forward",
    "cache",
    "loop",
    "reload",
    "loadbalance",
)
# Bump when the build recipe changes: a cache built by an older recipe is rebuilt.
RECIPE = "3"


def kube_pins() -> KubePins:
    k = pins().kube
    if len(k.version.split(".")) != 3 or k.version.startswith("v"):
        raise ConfigError(f"[kubernetes].version in versions.toml must be X.Y.Z: {k.version}")
    return k


NETPOL = "kube-network-policies"


@dataclass(frozen=True)
class Binaries:
    kube_bin: Path  # the five Kubernetes server commands and etcd
    coredns: Path
    netpol: Path  # the NetworkPolicy enforcer
    kubectl: Path

    def __getitem__(self, name: str) -> Path:
        named = {"coredns": self.coredns, NETPOL: self.netpol, "kubectl": self.kubectl}
        return named.get(name, self.kube_bin / name)


def tools_dir() -> Path:
    return Path(os.environ.get("LOGBERG_TOOLS", ".tools")).resolve()


def kube_bin_dir(tools: Path, pins: KubePins) -> Path:
    return tools / "kubernetes" / pins.version / "bin"


def coredns_bin_dir(tools: Path, pins: KubePins) -> Path:
    return tools / "coredns" / pins.coredns / "bin"


def netpol_bin_dir(tools: Path, pins: KubePins) -> Path:
    return tools / NETPOL / pins.network_policies / "bin"


def cached_binaries(tools: Path | None = None) -> Binaries | None:
    """The cached binaries if the cache is complete, without building anything."""
    tools = tools or tools_dir()
    pins = kube_pins()
    kube, dns = kube_bin_dir(tools, pins), coredns_bin_dir(tools, pins)
    netpol = netpol_bin_dir(tools, pins)
    if (
        complete(kube, kube_key(pins), (*KUBE_COMMANDS, "etcd"))
        and complete(dns, coredns_key(pins), ("coredns",))
        and complete(netpol, netpol_key(pins), (NETPOL,))
        and os.access(kubectl_path(tools), os.X_OK)
    ):
        return Binaries(
            kube_bin=kube,
            coredns=dns / "coredns",
            netpol=netpol / NETPOL,
            kubectl=kubectl_path(tools),
        )
    return None


def kube_key(pins: KubePins) -> str:
    return json.dumps(
        {"recipe": RECIPE, "kubernetes": pins.version, "etcd": pins.etcd, "cmds": KUBE_COMMANDS}
    )


def coredns_key(pins: KubePins) -> str:
    return json.dumps(
        {
            "recipe": RECIPE,
            "coredns": pins.coredns,
            "plugins": COREDNS_PLUGINS,
            "modules_of": pins.version,  # built with the Kubernetes build's module versions
        }
    )


def netpol_key(pins: KubePins) -> str:
    return json.dumps({"recipe": RECIPE, NETPOL: pins.network_policies, "modules_of": pins.version})


def complete(bindir: Path, key: str, names: tuple[str, ...]) -> bool:
    stamp = bindir / ".built"
    return (
        stamp.is_file()
        and stamp.read_text() == key
        and all(os.access(bindir / n, os.X_OK) for n in names)
    )
