"""up / down / status of the local single-node cluster.

up: build (or reuse) the binaries and images, certificates and configs, the host network
(bridge, routes, hermetic rule), then containerd, etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kubelet, kube-proxy, the NetworkPolicy enforcer
and CoreDNS, each waited on for real readiness (/readyz, healthz, node Ready, the
enforcer's queue bound, a DNS answer through the Service IP).
A second `up` on a healthy cluster only checks it.

down: stop the pods through the kubelet (so the CNI plugin releases their network), stop
every process by its recorded pid, then undo the host changes recorded by `up`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg_platform.cluster import addons, config, host, netpol, node_images
from logberg_platform.cluster.binaries import (
    NETPOL,
    Binaries,
    cached_binaries,
    kube_bin_dir,
    kube_pins,
    kubectl_path,
    required_binaries,
)
from logberg_platform.cluster.cluster_settings import FIXED_PORTS, ClusterSettings
from logberg_platform.cluster.dns import query_a
from logberg_platform.cluster.pki import ensure_pki, write_kubeconfigs
from logberg_platform.supervisor import Supervised, processes_with, run, terminate

Log = Callable[[str], None]
ORDER = (
    "containerd",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    NETPOL,
)
READY_TIMEOUT = 180.0


# -- components -------------------------------------------------------------------------------


def components(s: ClusterSettings) -> dict[str, Supervised]:
    """The processes, each known by its program and the cluster home in its command line."""
    marker = str(s.home) + "/"
    return {
        name: Supervised(name, s.run / f"{name}.pid", s.logs / f"{name}.log", marker, name)
        for name in ORDER
    }


def commands(s: ClusterSettings, b: Binaries) -> dict[str, list[str]]:
    """The command line of each process."""
    return {
        "containerd": config.containerd_argv(s),
        "etcd": config.etcd_argv(s, b),
        "kube-apiserver": config.apiserver_argv(s, b),
        "kube-controller-manager": config.controller_manager_argv(s, b),
        "kube-scheduler": config.scheduler_argv(s, b),
        "kubelet": config.kubelet_argv(s, b),
        "kube-proxy": config.kube_proxy_argv(s, b),
        NETPOL: netpol.argv(s, b),
    }


def kubectl(s: ClusterSettings, b: Binaries, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [str(b["kubectl"]), f"--kubeconfig={s.kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise ServiceError(f"kubectl {' '.join(args[:3])} failed: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


# -- preflight --------------------------------------------------------------------------------


def preflight(s: ClusterSettings) -> None:
    if os.geteuid() != 0:
        raise ConfigError(
            "the local cluster needs root: it runs containerd and the kubelet and changes "
            "iptables, routes and sysctls"
        )
    need = {
        "containerd": "Debian package containerd",
        "ctr": "Debian package containerd",
        "iptables": "Debian package iptables",
        "ip": "Debian package iproute2",
        "openssl": "Debian package openssl",
        "podman": "Debian package podman",
        "gcc": "Debian package gcc",
    }
    for cmd, where in need.items():
        if shutil.which(cmd) is None:
            raise ConfigError(f"`{cmd}` not found on the PATH ({where})")
    for path, where in (
        (config.RUNC, "runc"),
        (f"{config.CNI_BIN}/bridge", "containernetworking-plugins"),
    ):
        if not Path(path).is_file():
            raise ConfigError(f"{path} not found (Debian package {where})")
    want = kube_pins().cni_plugins
    got = run(["dpkg-query", "-W", "-f=${Version}", "containernetworking-plugins"], check=False)
    if not got.startswith(want):
        raise ConfigError(
            f"containernetworking-plugins {got or '(not installed)'} does not match "
            f"[kubernetes].cni_plugins = {want} in versions.toml"
        )
    host.check_bridge_is_ours(s)


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def check_ports(s: ClusterSettings, comps: dict[str, Supervised]) -> None:
    """Fail fast when a port we need is taken by a process that is not ours."""
    if any(c.pid() is not None for c in comps.values() if c.name != "containerd"):
        return  # a partly running cluster of ours holds some of them
    taken = listening_ports()
    wanted = {
        s.api_port: "the apiserver (setting LOGBERG_CLUSTER_API_PORT)",
        s.etcd_port: "etcd (setting LOGBERG_CLUSTER_ETCD_PORT)",
        s.etcd_port + 1: "etcd's peer port (LOGBERG_CLUSTER_ETCD_PORT + 1)",
    }
    wanted |= {p: f"the {what} (fixed port)" for p, what in FIXED_PORTS.items()}
    for port, what in wanted.items():
        if port in taken:
            raise ConfigError(f"port {port}, needed by {what}, is already in use")
    if netpol.queue_bound():
        raise ConfigError(
            f"NFQUEUE {netpol.QUEUE}, which the NetworkPolicy enforcer listens on, already has "
            "a listener that is not this cluster's (/proc/net/netfilter/nfnetlink_queue)"
        )


# -- readiness --------------------------------------------------------------------------------


def wait_until(
    what: str, check: Callable[[], bool], comp: Supervised | None, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if comp is not None:
            comp.alive_or_fail()
        time.sleep(0.5)
    tail = f"; see {comp.log_file}:\n{comp.log_tail()}" if comp else ""
    raise ServiceError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")


def https_ok(url: str, s: ClusterSettings | None = None) -> bool:
    """GET url; with settings, verify against the cluster CA as the admin user."""
    if s is None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(cafile=str(s.pki / "ca.crt"))
        ctx.load_cert_chain(str(s.pki / "admin.crt"), str(s.pki / "admin.key"))
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=3) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def node_ready(s: ClusterSettings, b: Binaries) -> bool:
    try:
        out = kubectl(
            s, b, "get", "node", s.node_name,
            "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
        )  # fmt: skip
    except ServiceError:
        return False
    return out.strip() == "True"


def dns_answers(s: ClusterSettings) -> bool:
    try:
        rcode, addrs = query_a(s.dns_ip, f"kubernetes.default.svc.{config.CLUSTER_DOMAIN}", 1.0)
    except OSError:
        return False
    return rcode == "NOERROR" and s.api_service_ip in addrs


def healthy(s: ClusterSettings, comps: dict[str, Supervised], b: Binaries | None) -> bool:
    if b is None or any(c.pid() is None for c in comps.values()):
        return False
    return https_ok(f"{s.server}/readyz", s) and node_ready(s, b) and dns_answers(s)


# -- up -----------------------------------------------------------------------------------------


def up(s: ClusterSettings, log: Log = print, make_base: Callable[[], str] | None = None) -> None:
    started = time.monotonic()
    preflight(s)
    cached = cached_binaries(s.tools)
    if cached is not None and healthy(s, components(s), cached):
        log(f"cluster already up ({s.server}, node {s.node_name} Ready, DNS answering)")
        log(env_lines(s))
        return
    # Ports before a (possibly long) first build: fail fast, naming the setting.
    check_ports(s, components(s))
    b = required_binaries(s.tools)
    comps = components(s)
    argv = commands(s, b)
    _, merged = host.record_host(s)
    if merged:
        log(
            f"host record: {s.host_record} was kept by a `down` that left something of the "
            "cluster's; merged with the host as it is now (tables and chains other programs "
            "made since are the host's)"
        )
    if ensure_pki(s):
        log(f"certificates: made in {s.pki}")
    write_kubeconfigs(s)
    base = node_images.base_image(log, make_base)
    pause = node_images.build_pause(base, log)
    coredns = node_images.build_coredns(b.coredns, base, log)
    config.write_configs(s, pause)
    log(f"network: bridge {s.bridge} {s.node_ip}/24, routes, hermetic FORWARD rule")
    host.setup_network(s)

    def start(
        name: str,
        check: Callable[[], bool],
        what: str,
        timeout: float = READY_TIMEOUT,
        env: dict[str, str] | None = None,
    ) -> None:
        comp = comps[name]
        if comp.pid() is None:
            log(f"{name}: starting (log {comp.log_file})")
            comp.start(argv[name], env=env, cwd=s.run)
        wait_until(f"{name}: {what}", check, comp, timeout)
        log(f"{name}: ready ({what})")

    start("containerd", lambda: _containerd_ok(s), "answers on its socket")
    node_images.load(s.containerd_socket, [pause, coredns], log)
    start("etcd", lambda: s.etcd_port in listening_ports(), f"listens on {s.etcd_port}")
    start("kube-apiserver", lambda: https_ok(f"{s.server}/readyz", s), "/readyz ok")
    start(
        "kube-controller-manager", lambda: https_ok("https://127.0.0.1:10257/healthz"), "/healthz"
    )
    start("kube-scheduler", lambda: https_ok("https://127.0.0.1:10259/healthz"), "/healthz")
    start("kubelet", lambda: node_ready(s, b), f"node {s.node_name} Ready")
    start("kube-proxy", lambda: http_ok("http://127.0.0.1:10256/healthz"), "/healthz")
    if comps[NETPOL].pid() is None:
        kubectl(s, b, "apply", "-f", "-", stdin=netpol.rbac_manifests())
        token = kubectl(
            s, b, "create", "token", netpol.ACCOUNT, f"--namespace={netpol.NAMESPACE}",
            f"--duration={netpol.TOKEN_DURATION}",
        )  # fmt: skip
        netpol.write_credentials(s, token.strip())
        netpol.link_binary(s, b)
    start(NETPOL, netpol.queue_bound, f"listens on NFQUEUE {netpol.QUEUE}", env=netpol.env(s))
    host.enforce_policies(s, netpol.QUEUE)
    log(f"network policies: enforced (new pod connections through NFQUEUE {netpol.QUEUE})")
    log("coredns: applying the Deployment and the kube-dns Service")
    kubectl(s, b, "apply", "-f", "-", stdin=addons.coredns_manifests(s, coredns))
    wait_until(
        f"CoreDNS to answer kubernetes.default.svc at {s.dns_ip}",
        lambda: dns_answers(s),
        None,
        READY_TIMEOUT,
    )
    log(f"coredns: answers at {s.dns_ip}")
    log(f"cluster up in {time.monotonic() - started:.0f}s: {s.server}, context {s.context}")
    log(env_lines(s))


def _containerd_ok(s: ClusterSettings) -> bool:
    if not s.containerd_socket.exists():
        return False
    proc = subprocess.run(
        ["ctr", "--address", str(s.containerd_socket), "version"], capture_output=True
    )
    return proc.returncode == 0


# -- down ---------------------------------------------------------------------------------------


def down(s: ClusterSettings, log: Log = print, purge: bool = False) -> list[str]:
    """Stop everything up started and undo its host changes. Returns what of the cluster's
    it could not remove (empty: everything; what it left of other programs is only said)."""
    if os.geteuid() != 0:
        raise ConfigError("the local cluster needs root to stop (it changed iptables/sysctls)")
    b = cached_binaries(s.tools)
    comps = components(s)
    record = host.HostRecord.load(s.host_record)
    if record is None and not any(c.pid() for c in comps.values()):
        log("cluster is not up (no record of a start)")
        if purge:
            _purge(s, log)
        return []
    for name in ("kube-controller-manager", "kube-scheduler"):
        if comps[name].stop():
            log(f"{name}: stopped")
    if b is not None and comps["kube-apiserver"].pid() and comps["kubelet"].pid():
        _drain_pods(s, b, comps, log)
    for name in ("kube-proxy", "kubelet", NETPOL):
        if comps[name].stop():
            log(f"{name}: stopped")
    _kill_pod_processes(s, comps, log)
    if comps["containerd"].stop():
        log("containerd: stopped")
    for pid, cmd in processes_with(str(s.containerd_socket)):
        log(f"stopping leftover shim {pid}: {cmd[:80]}")
        terminate(pid, 5)
    for name in ("kube-apiserver", "etcd"):
        if comps[name].stop():
            log(f"{name}: stopped")
    notes = host.Notes()
    for pid, cmd in processes_with(str(s.home) + "/"):
        if is_client(cmd, s):  # kubectl, helm, `logberg k8s`: not the cluster's
            notes.info.append(
                f"client process {pid} still runs, with the cluster's kubeconfig: {cmd[:120]}; left"
            )
        else:
            notes.failures.append(f"process {pid} still runs: {cmd[:120]}")
    unmounted = host.unmount_under(s.home)
    if unmounted:
        log(f"unmounted {unmounted} mounts under {s.home}")
    if record is not None:
        notes.add(host.teardown_network(s, record))
        host.restore_sysctls(record)
        notes.failures += host.remove_cgroups(record)
        notes.failures += host.clean_host_dirs(s, record)
        if not notes.failures:  # else kept: a second `down` retries what is left
            s.host_record.unlink()
    # Per-run state: pod IP leases and the runtime's state folder.
    shutil.rmtree(s.home / "cni" / "ipam", ignore_errors=True)
    shutil.rmtree(s.containerd_state, ignore_errors=True)
    for note in notes.info:
        log(f"note: {note}")
    for note in notes.failures:
        log(f"error: {note}")
    if notes.failures:
        log(
            f"cluster down: {len(notes.failures)} thing(s) of the cluster's left (above); "
            f"the host record stays in {s.host_record} for the next `down`"
        )
    else:
        log("cluster down: processes stopped, host network, sysctls and mounts restored")
    if purge:
        _purge(s, log)
    return notes.failures


def is_client(cmd: str, s: ClusterSettings) -> bool:
    """A command line that names the cluster's home only in its kubeconfig (a client the
    user runs: kubectl, helm, `logberg k8s ...`), not a process of the cluster's."""
    kubeconfig = str(s.kubeconfig)
    rest = cmd.replace(f"--kubeconfig={kubeconfig}", "").replace(f"--kubeconfig {kubeconfig}", "")
    return rest != cmd and str(s.home) + "/" not in rest


def _drain_pods(s: ClusterSettings, b: Binaries, comps: dict[str, Supervised], log: Log) -> None:
    """Delete every pod so the kubelet stops its sandbox and the CNI plugin frees its network."""
    try:
        kubectl(
            s, b, "delete", "pods", "--all", "-A", "--force", "--grace-period=0", "--wait=false"
        )
    except ServiceError as err:
        log(f"warning: could not delete pods ({err}); stopping them by force")
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not _running_tasks(s) and not _netns(s):
            log("pods: stopped by the kubelet")
            return
        time.sleep(1)
    log("warning: pods still running after 60s; stopping them by force")


def _running_tasks(s: ClusterSettings) -> list[str]:
    try:
        out = node_images.ctr(s.containerd_socket, "tasks", "ls", timeout=30)
    except (ServiceError, subprocess.TimeoutExpired):
        return []
    return [ln.split()[0] for ln in out.splitlines()[1:] if ln.split()[-1:] == ["RUNNING"]]


TASKS_DIR = "io.containerd.runtime.v2.task"


def _netns(s: ClusterSettings) -> list[Path]:
    """The pod network namespaces still mounted under the runtime's state folder.

    Walked while pods stop: folders vanish under the walk (`os.walk` skips them, where
    `Path.rglob` raises), and the tasks' folders, which hold the containers' mounted root
    file systems, are not entered.
    """
    return [p for p in _files(s.containerd_state, skip={TASKS_DIR}) if p.parent.name == "netns"]


def _files(root: Path, skip: frozenset[str] | set[str] = frozenset()) -> list[Path]:
    """Every file under `root`, tolerating folders removed during the walk."""
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        found += [Path(here, f) for f in files]
    return found


def _kill_pod_processes(s: ClusterSettings, comps: dict[str, Supervised], log: Log) -> None:
    """Whatever still runs in a pod: kill its task through containerd, then by cgroup."""
    if comps["containerd"].pid() is not None:
        for task in _running_tasks(s):
            with contextlib.suppress(ServiceError, subprocess.TimeoutExpired):
                node_images.ctr(
                    s.containerd_socket, "tasks", "kill", "-a", "-s", "SIGKILL", task, timeout=30
                )
    pids: set[int] = set()
    for cg in host.kubepods_cgroups():
        for procs in (f for f in _files(cg) if f.name == "cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(p) for p in procs.read_text().split()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    if pids:
        log(f"killed {len(pids)} leftover pod processes")
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = {p for p in pids if Path(f"/proc/{p}").exists()}
        time.sleep(0.2)


def _purge(s: ClusterSettings, log: Log) -> None:
    if host.mounts_under(s.home):
        raise ServiceError(f"mounts remain under {s.home}; not deleting it")
    shutil.rmtree(s.home, ignore_errors=True)
    log(f"removed {s.home}")


# -- status and load ----------------------------------------------------------------------------


def status(s: ClusterSettings) -> str:
    b = cached_binaries(s.tools)
    comps = components(s)
    lines = [f"cluster home {s.home}  server {s.server}  context {s.context}"]
    for c in comps.values():
        pid = c.pid()
        state = "running" if pid else "stopped"
        lines.append(f"  {c.name:<24} {state:<8} pid {pid or '-':<8} log {c.log_file}")
    if b is None:
        lines.append(f"  binaries: not built yet (cache {s.tools / 'kubernetes'})")
        return "\n".join(lines)
    if comps["kube-apiserver"].pid() and https_ok(f"{s.server}/readyz", s):
        lines.append("  apiserver: /readyz ok")
        with contextlib.suppress(ServiceError):
            lines.append(kubectl(s, b, "get", "nodes", "-o", "wide").rstrip())
            lines.append(kubectl(s, b, "get", "pods", "-A", "-o", "wide").rstrip())
        lines.append(f"  dns {s.dns_ip}: {'answering' if dns_answers(s) else 'not answering'}")
        lines.append(env_lines(s))
    else:
        lines.append("  apiserver: not ready")
    return "\n".join(lines)


def env_lines(s: ClusterSettings) -> str:
    """Shell lines that point kubectl (`make tools`', of the cluster's minor) at the cluster,
    with the cluster's own commands (kube-apiserver, etcd, ...) after it on the PATH."""
    first = f"{kubectl_path(s.tools).parent}:{kube_bin_dir(s.tools, kube_pins())}"
    return f"export KUBECONFIG={s.kubeconfig}\nexport PATH={first}:$PATH"


def load(
    s: ClusterSettings,
    refs: list[str],
    log: Log = print,
    also_as: Callable[[str], list[str]] | None = None,
) -> None:
    if not components(s)["containerd"].pid():
        raise ServiceError("the cluster is not up (containerd is not running): make cluster-up")
    node_images.load(s.containerd_socket, refs, log, also_as)
