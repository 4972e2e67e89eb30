"""What the cluster changes on the host, recorded by `up` and undone by `down`.

`up` first writes a record of the host as it found it: the sysctls the cluster (or the
kubelet and kube-proxy) may change, the iptables chains that already existed, the host
folders components insist on. `down` restores the sysctls, deletes only the chains and
rules that appeared (KUBE-*, CNI-*, ours) plus the rules that jump to them, the bridge, the
route, our mounts and cgroups, and only the host folders that were absent before.

The network is hermetic: the node's pod /24 lives on our bridge; the rest of the pod range
is routed `unreachable`; the service range is routed onto the bridge (no dummy interfaces on
this kernel) so a ClusterIP without a kube-proxy rule goes nowhere instead of out of the
default route; a FORWARD rule rejects anything a pod sends to an address outside the pod
and service ranges.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg_platform.cluster.cluster_settings import ClusterSettings
from logberg_platform.cluster.config import CHAIN, MARK
from logberg_platform.supervisor import run

# Sysctls that up, the kubelet (setupKernelTunables) or kube-proxy may write.
SYSCTLS = (
    "net.ipv4.ip_forward",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.ipv4.conf.all.route_localnet",
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
)
# Folders on the host that containerd, the CNI library or the kubelet create whatever their
# configuration says (shim sockets, the CNI result cache, container log links, and the
# device-plugin socket the kubelet always puts in /var/lib/kubelet/device-plugins, a path
# compiled into it). /usr/libexec/kubernetes is the flex-volume folder's default, kept here
# in case a component still makes it.
HOST_DIRS = (
    "/run/containerd",
    "/var/lib/cni",
    "/var/log/containers",
    "/var/lib/kubelet",
    "/usr/libexec/kubernetes",
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
OWNED_CHAIN = re.compile(r"^(KUBE-|CNI-|LOGBERG-K8S-)")
FAMILIES = ("iptables", "ip6tables")


@dataclass
class HostRecord:
    sysctls: dict[str, str]
    chains: dict[str, list[str]]  # "iptables:filter" -> chain names present before up
    dirs: dict[str, bool]  # host folder -> existed before up
    cgroups: dict[str, bool] = field(default_factory=dict)  # kubepods dir -> existed before
    tables: list[str] = field(default_factory=list)  # "iptables:mangle" tables present before

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> HostRecord | None:
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None


# -- reading the host -------------------------------------------------------------------------


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctls() -> dict[str, str]:
    out = {}
    for key in SYSCTLS:
        with contextlib.suppress(OSError):
            out[key] = sysctl_path(key).read_text().strip()
    return out


def write_sysctl(key: str, value: str) -> None:
    try:
        sysctl_path(key).write_text(value + "\n")
    except OSError as err:
        raise ServiceError(f"cannot set sysctl {key}={value}: {err}") from err


def save_rules(family: str) -> dict[str, list[str]]:
    """table -> lines of `<family>-save` (chain declarations and rules, no counters)."""
    try:
        text = run([f"{family}-save"], timeout=60)
    except (ServiceError, FileNotFoundError):
        return {}
    tables: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("*"):
            current = line[1:]
            tables[current] = []
        elif current and (line.startswith(":") or line.startswith("-A ")):
            tables[current].append(re.sub(r" \[\d+:\d+\]$", "", line))
    return tables


def chains_of(family: str) -> dict[str, list[str]]:
    out = {}
    for table, lines in save_rules(family).items():
        out[f"{family}:{table}"] = [ln[1:].split()[0] for ln in lines if ln.startswith(":")]
    return out


def record_host(s: ClusterSettings) -> tuple[HostRecord, bool]:
    """The record of the host before the cluster, written by `up`; and whether a record
    an earlier `down` kept (it could not remove something of the cluster's) was merged in.

    A kept record knows what the cluster changed before it (the sysctls' values, the folders
    and cgroups it made): those stay as recorded. It is older than what other programs did
    since (podman's tables and chains, made after it): tables and chains present now that
    are not the cluster's count as the host's, so the next `down` leaves them."""
    chains: dict[str, list[str]] = {}
    for family in FAMILIES:
        chains.update(chains_of(family))
    now = HostRecord(
        sysctls=read_sysctls(),
        chains=chains,
        dirs={d: Path(d).exists() for d in HOST_DIRS},
        cgroups={str(p): p.exists() for p in kubepods_cgroups()},
        tables=sorted(chains),
    )
    kept = HostRecord.load(s.host_record)
    record = now if kept is None else merged(kept, now)
    record.save(s.host_record)
    return record, kept is not None


def merged(kept: HostRecord, now: HostRecord) -> HostRecord:
    """`kept` (an earlier record), plus the tables and chains of the host `now` that are
    not the cluster's (a table counts when it holds no chain of the cluster's)."""
    chains = {table: list(names) for table, names in kept.chains.items()}
    for table, names in now.chains.items():
        others = [c for c in names if not OWNED_CHAIN.match(c)]
        chains[table] = sorted({*chains.get(table, []), *others})
    tables = set(kept.tables) | {
        t for t, names in now.chains.items() if not any(OWNED_CHAIN.match(c) for c in names)
    }
    return HostRecord(
        sysctls={**now.sysctls, **kept.sysctls},
        chains=chains,
        dirs={**now.dirs, **kept.dirs},
        cgroups={**now.cgroups, **kept.cgroups},
        tables=sorted(tables),
    )


def kubepods_cgroups() -> list[Path]:
    return [h / "kubepods" for h in sorted(CGROUP_ROOT.iterdir()) if h.is_dir()]


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


# -- up -----------------------------------------------------------------------------------------


OWNER_PREFIX = "logberg-cluster:"  # the bridge's alias names the cluster home that made it


def bridge_owner(name: str) -> Path | None:
    """The cluster home recorded on a bridge we made, or None (absent, or not ours)."""
    try:
        alias = Path(f"/sys/class/net/{name}/ifalias").read_text().strip()
    except OSError:
        return None
    return Path(alias.removeprefix(OWNER_PREFIX)) if alias.startswith(OWNER_PREFIX) else None


def check_bridge_is_ours(s: ClusterSettings) -> None:
    """Fail fast if the bridge exists but this cluster did not make it; if another logberg
    cluster did, name its home and the command that removes it."""
    if not link_exists(s.bridge) or HostRecord.load(s.host_record) is not None:
        return
    owner = bridge_owner(s.bridge)
    if owner == s.home:  # ours, but its record is gone: nothing knows what to restore
        raise ConfigError(
            f"the network interface {s.bridge} was made by this cluster, whose host record "
            f"is gone; remove it (ip link delete {s.bridge}) and run up again"
        )
    if owner is not None:
        raise ConfigError(
            f"the network interface {s.bridge} belongs to the logberg cluster at {owner}; "
            f"stop it first (LOGBERG_CLUSTER_HOME={owner} logberg cluster down) or set "
            "LOGBERG_CLUSTER_BRIDGE to another name"
        )
    raise ConfigError(
        f"a network interface named {s.bridge} already exists and this cluster did not "
        "create it; set LOGBERG_CLUSTER_BRIDGE to another name"
    )


def setup_network(s: ClusterSettings) -> None:
    """Bridge, routes, forwarding sysctls and the hermetic FORWARD rule (idempotent)."""
    write_sysctl("net.ipv4.ip_forward", "1")
    write_sysctl("net.bridge.bridge-nf-call-iptables", "1")
    if not link_exists(s.bridge):
        run(["ip", "link", "add", s.bridge, "type", "bridge"])
        run(["ip", "link", "set", "dev", s.bridge, "alias", f"{OWNER_PREFIX}{s.home}"])
    addr = f"{s.node_ip}/{s.node_subnet.prefixlen}"
    if addr not in run(["ip", "-4", "-o", "addr", "show", "dev", s.bridge]):
        run(["ip", "addr", "add", addr, "dev", s.bridge])
    run(["ip", "link", "set", s.bridge, "up"])
    # The rest of the pod range goes nowhere (the node's /24 on the bridge is more specific).
    run(["ip", "route", "replace", "unreachable", str(s.pod_cidr)])
    # The service range onto the bridge: a local packet to a ClusterIP needs a route before
    # kube-proxy's OUTPUT DNAT rewrites it; one without a rule dies on the bridge.
    run(["ip", "route", "replace", str(s.service_cidr), "dev", s.bridge, "src", s.node_ip])
    _hermetic_rules(s)


def _hermetic_rules(s: ClusterSettings) -> None:
    ipt = ["iptables", "-w", "5", "-t", "filter"]
    if subprocess.run([*ipt, "-n", "-L", CHAIN], capture_output=True).returncode != 0:
        run([*ipt, "-N", CHAIN])
    run([*ipt, "-F", CHAIN])
    for dst in (str(s.pod_cidr), str(s.service_cidr)):
        run([*ipt, "-A", CHAIN, "-d", dst, "-j", "RETURN"])
    reject = ["-j", "REJECT", "--reject-with", "icmp-net-prohibited"]
    run(
        [
            *ipt,
            "-A",
            CHAIN,
            "-m",
            "comment",
            "--comment",
            f"{MARK}: pods reach nothing else",
            *reject,
        ]
    )
    jump = ["FORWARD", "-i", s.bridge, "-m", "comment", "--comment", MARK, "-j", CHAIN]
    if subprocess.run([*ipt, "-C", *jump], capture_output=True).returncode != 0:
        run([*ipt, "-I", *jump])


NETPOL_CHAIN = "LOGBERG-K8S-NETPOL"


def enforce_policies(s: ClusterSettings, queue: int) -> None:
    """Hand the first packet of every new pod connection to the NetworkPolicy enforcer's
    NFQUEUE (logberg_platform.cluster.netpol says why here and why so). Idempotent."""
    ipt = ["iptables", "-w", "5", "-t", "mangle"]
    if subprocess.run([*ipt, "-n", "-L", NETPOL_CHAIN], capture_output=True).returncode != 0:
        run([*ipt, "-N", NETPOL_CHAIN])
    run([*ipt, "-F", NETPOL_CHAIN])
    run([*ipt, "-A", NETPOL_CHAIN, "-m", "conntrack", "!", "--ctstate", "NEW", "-j", "RETURN"])
    # Local traffic of root: the kubelet's probes, the apiserver calling webhooks.
    run([*ipt, "-A", NETPOL_CHAIN, "-m", "owner", "--uid-owner", "0", "-j", "RETURN"])
    for side in ("-s", "-d"):
        run(
            [
                *ipt,
                "-A",
                NETPOL_CHAIN,
                side,
                str(s.pod_cidr),
                "-m",
                "comment",
                "--comment",
                f"{MARK}: NetworkPolicy decision",
                "-j",
                "NFQUEUE",
                "--queue-num",
                str(queue),
            ]
        )
    jump = ["POSTROUTING", "-m", "comment", "--comment", MARK, "-j", NETPOL_CHAIN]
    if subprocess.run([*ipt, "-C", *jump], capture_output=True).returncode != 0:
        run([*ipt, "-A", *jump])


def hermetic_reject_count(s: ClusterSettings) -> int:
    """Packets the hermetic rule has rejected so far."""
    out = run(["iptables", "-w", "5", "-t", "filter", "-n", "-v", "-x", "-L", CHAIN])
    for line in out.splitlines():
        if "REJECT" in line:
            return int(line.split()[0])
    raise ServiceError(f"no REJECT rule in chain {CHAIN}")


# -- down ---------------------------------------------------------------------------------------


@dataclass
class Notes:
    """What `down` says besides its progress: `failures`, something of the cluster's it
    could not remove (down exits non-zero and keeps the host record); `info`, something
    it left because it is not the cluster's (down exits 0)."""

    failures: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    def add(self, other: Notes) -> None:
        self.failures += other.failures
        self.info += other.info


def teardown_network(s: ClusterSettings, record: HostRecord) -> Notes:
    """Remove chains/rules that appeared since up, the route and the bridge."""
    notes = Notes()
    for family in FAMILIES:
        notes.failures += _remove_rules(family, record)
        notes.add(_remove_new_tables(family, record))
    with contextlib.suppress(ServiceError):
        run(["ip", "route", "del", "unreachable", str(s.pod_cidr)])
    with contextlib.suppress(ServiceError):
        run(["ip", "route", "del", str(s.service_cidr), "dev", s.bridge])
    if link_exists(s.bridge):
        run(["ip", "link", "del", s.bridge])
    return notes


def _remove_rules(family: str, record: HostRecord) -> list[str]:
    notes = []
    for table, lines in save_rules(family).items():
        before = set(record.chains.get(f"{family}:{table}", []))
        chains = [ln[1:].split()[0] for ln in lines if ln.startswith(":")]
        owned = {c for c in chains if OWNED_CHAIN.match(c) and c not in before}
        ipt = [family, "-w", "5", "-t", table]
        # Rules elsewhere that jump to our chains or carry our mark.
        for line in lines:
            if not line.startswith("-A "):
                continue
            args = shlex.split(line)
            chain = args[1]
            if chain in owned:
                continue
            target = args[args.index("-j") + 1] if "-j" in args else ""
            if target in owned or f"{MARK}" in line:
                proc = subprocess.run([*ipt, "-D", *args[1:]], capture_output=True, text=True)
                if proc.returncode != 0:
                    notes.append(f"{family} -t {table}: could not delete {line}: {proc.stderr}")
        for chain in owned:
            subprocess.run([*ipt, "-F", chain], capture_output=True)
        for chain in owned:
            proc = subprocess.run([*ipt, "-X", chain], capture_output=True, text=True)
            if proc.returncode != 0:
                notes.append(f"{family} -t {table}: could not delete chain {chain}: {proc.stderr}")
    return notes


# Chain name prefixes of programs that make iptables tables of their own, for saying whose
# a table that appeared during the cluster's life is.
KNOWN_OWNERS = (
    ("NETAVARK", "podman's netavark"),
    ("DOCKER", "Docker"),
    ("f2b-", "fail2ban"),
    ("ufw-", "ufw"),
    ("LIBVIRT", "libvirt"),
)


def _remove_new_tables(family: str, record: HostRecord) -> Notes:
    """Tables that appeared during the cluster's life (iptables-nft creates one on first
    use). Once the cluster's chains and rules are gone (`_remove_rules`), a table left with
    nothing but empty, accept-all built-in chains was made for the cluster (the kubelet,
    kube-proxy, up): it is deleted. A table still holding chains or rules was made or
    filled by another program too (podman's netavark, when images are built while the
    cluster runs): it is left, and said whose, as information; unless what is left in it
    is the cluster's, which is a failure."""
    notes = Notes()
    nft_family = "ip" if family == "iptables" else "ip6"
    for table, lines in save_rules(family).items():
        if f"{family}:{table}" in record.tables:
            continue
        declared = [ln[1:].split() for ln in lines if ln.startswith(":")]  # name, policy
        chains = [d[0] for d in declared if d[1] == "-"]  # a program's, not built-in ones
        rules = [ln for ln in lines if ln.startswith("-A ")]
        ours = [c for c in chains if OWNED_CHAIN.match(c)] + [r for r in rules if MARK in r]
        if ours:
            notes.failures.append(
                f"{family} table {table}: the cluster's {', '.join(ours[:5])} could not be removed"
            )
            continue
        if rules or chains or any(d[1] != "ACCEPT" for d in declared):
            owner = owner_of(chains)
            notes.info.append(
                f"{family} table {table} appeared while the cluster ran and holds {len(rules)} "
                f"rule(s) of another program (chains: {', '.join(chains[:5]) or 'built-in'}"
                f"{'; ' + owner if owner else ''}); left as it is"
            )
            continue
        if shutil.which("nft") is None:
            notes.failures.append(
                f"{family} table {table}: made for the cluster and empty now, but without "
                "`nft` it cannot be deleted"
            )
            continue
        proc = subprocess.run(["nft", "delete", "table", nft_family, table], capture_output=True)
        if proc.returncode != 0:
            notes.failures.append(
                f"nft delete table {nft_family} {table}: {proc.stderr.decode().strip()}"
            )
    return notes


def owner_of(chains: list[str]) -> str:
    """Whose these chains are, when a known program's prefix says so ("" when none does)."""
    names = sorted({who for c in chains for prefix, who in KNOWN_OWNERS if c.startswith(prefix)})
    return ", ".join(names)


def restore_sysctls(record: HostRecord) -> None:
    now = read_sysctls()
    for key, value in record.sysctls.items():
        if now.get(key) != value:
            write_sysctl(key, value)


def unmount_under(root: Path) -> int:
    """Unmount everything mounted at or below root (deepest first). Returns the count."""
    count = 0
    for _ in range(5):  # lazily unmounted parents can uncover more
        points = mounts_under(root)
        if not points:
            break
        for point in sorted(points, key=lambda p: p.count("/"), reverse=True):
            proc = subprocess.run(["umount", point], capture_output=True)
            if proc.returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True)
            count += 1
    return count


def mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(root) or point.startswith(prefix):
            points.append(point)
    return points


def remove_cgroups(record: HostRecord) -> list[str]:
    notes = []
    for path_s, existed in record.cgroups.items():
        path = Path(path_s)
        if existed or not path.exists():
            continue
        dirs = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, path]:
            try:
                d.rmdir()
            except OSError as err:
                notes.append(f"cgroup {d}: {err}")
    return notes


def clean_host_dirs(s: ClusterSettings, record: HostRecord) -> list[str]:
    """CNI result-cache files of our sandboxes, log links into our home, empty folders."""
    notes = []
    results = Path("/var/lib/cni/results")
    sandboxes = s.containerd_root / "io.containerd.grpc.v1.cri" / "sandboxes"
    ids = [d.name for d in sandboxes.iterdir()] if sandboxes.is_dir() else []
    if results.is_dir():
        # <network>-<sandbox id>-<interface>: our bridge network, and the loopback network
        # containerd adds to every sandbox of ours (only stopped pods skip the CNI DEL).
        for f in results.iterdir():
            if f.name.startswith(f"{s.cni_network}-") or any(f"-{i}-" in f.name for i in ids):
                f.unlink(missing_ok=True)
    links = Path("/var/log/containers")
    if links.is_dir():
        for link in links.iterdir():
            if link.is_symlink() and str(s.home) in os.readlink(link):
                link.unlink()
    for d, existed in record.dirs.items():
        path = Path(d)
        if existed or not path.exists():
            continue
        for sub in sorted(path.rglob("*"), key=lambda p: -len(p.parts)):
            if sub.is_socket():  # a stopped component's socket (the kubelet's device plugins)
                sub.unlink(missing_ok=True)
            elif sub.is_dir() and not sub.is_symlink():
                with contextlib.suppress(OSError):
                    sub.rmdir()
        try:
            path.rmdir()
        except OSError:
            notes.append(f"{d} was created by the cluster but is not empty; left in place")
    return notes


# -- a comparable picture of the host, for tests and `status` -----------------------------------


def snapshot() -> dict[str, object]:
    """The host state `down` must return to: rules, links, routes, mounts, sysctls, dirs."""
    rules = {}
    for family in FAMILIES:
        for table, lines in save_rules(family).items():
            rules[f"{family}:{table}"] = sorted(lines)
    links = sorted(
        re.sub(r"^\d+: ", "", ln).split()[0]
        for ln in run(["ip", "-o", "link", "show"]).splitlines()
    )
    return {
        "rules": rules,
        "links": links,
        "routes": sorted(run(["ip", "route", "show", "table", "all"]).splitlines()),
        "mounts": sorted(
            ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines()
        ),
        "sysctls": read_sysctls(),
        "dirs": {d: Path(d).exists() for d in HOST_DIRS},
        "cgroups": {str(p): p.exists() for p in kubepods_cgroups()},
    }
