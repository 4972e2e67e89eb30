"""NetworkPolicy enforcement on the local cluster: kube-network-policies as a host process.

The bridge CNI enforces nothing. kube-network-policies (sigs.k8s.io; the enforcer inside
kind's own network daemon) decides per connection in user space: the kernel hands it the
first packet of each new connection through NFQUEUE, and it checks the packet against the
NetworkPolicies of the pods at both ends (from its informers on pods, namespaces and
policies), then answers accept or drop. Later packets of an accepted connection pass through
conntrack without it.

Two parts differ from upstream's own install, both because of this machine:
- **The queue rule is ours.** Upstream writes an nftables `queue` rule, and this kernel lacks
  CONFIG_NFT_QUEUE. The controller logs the failed sync and goes on. `host.enforce_policies`
  feeds the same queue with the iptables NFQUEUE target, which the kernel has, at upstream's
  place: mangle POSTROUTING, after DNAT and before SNAT. It takes new connections from or to
  the pod range, and exempts local traffic of root (kubelet probes, the apiserver's webhook
  calls), as upstream does. It has no `--queue-bypass`: while the enforcer is down, new pod
  connections are dropped, never let through.
- **Its credentials.** It reads them only from the in-cluster paths (`rest.InClusterConfig`).
  So it runs in a mount namespace of its own, where a tmpfs `/run` holds a ServiceAccount
  token at the standard path, and `KUBERNETES_SERVICE_HOST`/`PORT` name the apiserver. It
  has a pid file and a log, and `down` stops it, like the cluster's other processes.

Not checked, as with upstream on kind: a pod's traffic to the node's own address (the
apiserver, a process on the host). It goes through INPUT, not POSTROUTING.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from logberg_platform.cluster.binaries import NETPOL, Binaries
from logberg_platform.cluster.cluster_settings import NETPOL_METRICS_PORT, ClusterSettings

QUEUE = 100  # the NFQUEUE number the enforcer listens on and the iptables rule feeds
NAMESPACE = "kube-system"
ACCOUNT = NETPOL
TOKEN_DURATION = "8760h"  # minted again at every start of the enforcer
SA_PATH = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run is /run


def secrets_dir(s: ClusterSettings) -> Path:
    return s.home / "netpol" / "serviceaccount"


def argv(s: ClusterSettings, b: Binaries) -> list[str]:
    """unshare a mount namespace, put the token at the in-cluster path, exec the enforcer
    (through a link in the cluster home, so the process names its cluster)."""
    link = s.run / NETPOL
    setup = (
        "mount -t tmpfs -o mode=0755,size=1m logberg-netpol /run"
        f" && mkdir -p {SA_PATH}"
        f' && mount --bind -o ro "$1" {SA_PATH}'
        ' && shift && exec "$@"'
    )
    return [
        "unshare", "--mount", "--propagation", "private", "--",
        "sh", "-c", setup, "netpol-setup", str(secrets_dir(s)),
        str(link),
        f"--hostname-override={s.node_name}",
        f"--nfqueue-id={QUEUE}",
        f"--metrics-bind-address=127.0.0.1:{NETPOL_METRICS_PORT}",
        "--disable-nri",
        # The DNS race it works around is fixed in kernels >= 6.12 (upstream's own note).
        "--netfilter-bug-1766-fix=false",
        "--fail-open=false",
        "--v=1",
    ]  # fmt: skip


def link_binary(s: ClusterSettings, b: Binaries) -> None:
    link = s.run / NETPOL
    link.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(b.netpol)


def env(s: ClusterSettings) -> dict[str, str]:
    return {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "KUBERNETES_SERVICE_HOST": s.node_ip,
        "KUBERNETES_SERVICE_PORT": str(s.api_port),
    }


def write_credentials(s: ClusterSettings, token: str) -> None:
    """The ServiceAccount files rest.InClusterConfig reads: token, ca.crt, namespace."""
    d = secrets_dir(s)
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d.parent, 0o700)
    fd = os.open(d / "token", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    shutil.copyfile(s.pki / "ca.crt", d / "ca.crt")
    (d / "namespace").write_text(NAMESPACE)


def queue_bound(queue: int = QUEUE) -> bool:
    """A process listens on the NFQUEUE (it has synced its informers and opened the queue)."""
    try:
        lines = Path("/proc/net/netfilter/nfnetlink_queue").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[:1] == [str(queue)] for line in lines)


def rbac_manifests() -> str:
    """Its ServiceAccount and read-only access to what it matches packets against."""
    meta = {"name": ACCOUNT, "namespace": NAMESPACE}
    watch = ["list", "watch"]
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"logberg:{ACCOUNT}"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods", "namespaces", "nodes"], "verbs": watch},
                {
                    "apiGroups": ["networking.k8s.io"],
                    "resources": ["networkpolicies"],
                    "verbs": watch,
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"logberg:{ACCOUNT}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"logberg:{ACCOUNT}",
            },
            "subjects": [{"kind": "ServiceAccount", **meta}],
        },
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1)
