"""The kind cluster's life cycle (`make kind-up`, `make kind-down`, `logberg kind ...`).

* **kind**: from PATH, else the pinned release ([kubernetes].kind) built from the Go proxy
  into .tools/bin.
* **The provider**: Docker where a Docker daemon answers, else podman (kind's podman
  provider, KIND_EXPERIMENTAL_PROVIDER=podman). Neither, or a podman older than
  MIN_PODMAN: an error naming what is missing, before anything is made.
* **The node image** (KIND_NODE_IMAGE): `auto` takes kind's kindest/node, pinned by digest
  ([kubernetes].kind_node_image), where the provider has it or Docker Hub answers, and
  otherwise logberg's offline image (node_image.build: rebuilt whenever an input changed);
  `kindest` and `offline` force one, and any other value is an image reference.
* **The host**: kind mounts /lib/modules into the node; where the host has none, kind-up
  makes the empty directory and records it, and kind-down removes it. On a cgroup v1 host
  the kubelet (>= 1.35) refuses to start unless `failCgroupV1: false`: kind-up adds that
  KubeletConfiguration patch to the config it passes kind, and says so.
* **kind-down** deletes the cluster, then whatever of the cluster's is left (node
  containers, their volumes, kind's network when no other cluster uses it, the /lib/modules
  it made), and checks: it fails only when something of the cluster's remains.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from logberg.errors import ConfigError, ServiceError
from logberg.versions import pins

Log = Callable[[str], None]

MIN_PODMAN = (4, 0)
NETWORK = "kind"  # the network kind's podman and docker providers create
CLUSTER_LABEL = "io.x-k8s.kind.cluster"
REGISTRY_PROBE = "https://registry-1.docker.io/v2/"
NODE_IMAGE_MODES = ("auto", "kindest", "offline")
CGROUP_V1_PATCH = """\
kind: KubeletConfiguration
failCgroupV1: false
"""


@dataclass(frozen=True)
class KindSettings:
    name: str
    config: Path  # charts/kind/kind-config.yaml
    home: Path  # $LOGBERG_HOME/kind: the generated config, the host record
    node_image: str = "auto"
    kind: str = ""  # a kind command; empty: PATH, else the pinned build
    wait: str = "300s"

    @classmethod
    def from_env(cls, name: str, config: Path) -> KindSettings:
        home = Path(os.environ.get("LOGBERG_HOME", ".logberg")).resolve() / "kind"
        image = os.environ.get("KIND_NODE_IMAGE", "auto").strip() or "auto"
        return cls(name, config, home, image, os.environ.get("KIND", "").strip())

    @property
    def node_container(self) -> str:
        return f"{self.name}-control-plane"


# -- preflight ---------------------------------------------------------------------------------


def provider() -> str:
    """docker where a daemon answers, else podman (new enough); else a ConfigError."""
    if shutil.which("docker") and _ok(["docker", "info", "--format", "{{.ServerVersion}}"]):
        return "docker"
    podman = shutil.which("podman")
    if podman is None:
        raise ConfigError(
            "kind needs Docker or podman: no Docker daemon answers `docker info` and podman "
            "is not installed (install one; KIND_EXPERIMENTAL_PROVIDER is set from what is found)"
        )
    out = subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout
    found = re.search(r"(\d+)\.(\d+)", out)
    version = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if version < MIN_PODMAN:
        raise ConfigError(
            f"podman {'.'.join(map(str, version))} is too old for kind's podman provider: "
            f"install podman >= {'.'.join(map(str, MIN_PODMAN))}, or Docker"
        )
    return "podman"


def kind_command(explicit: str, log: Log) -> str:
    """KIND where set, else kind on PATH, else the pinned release built into .tools/bin."""
    if explicit:
        if shutil.which(explicit) is None:
            raise ConfigError(f"KIND={explicit}: not found")
        return explicit
    found = shutil.which("kind") or _pinned_kind()
    if found:
        return found
    from logberg_platform.build import tools as build_tools
    from logberg_platform.build.kubernetes_cache import tools_dir

    log(f"kind not on PATH: building kind v{pins().kube.kind} from the Go proxy")
    return str(build_tools.ensure_kind(tools_dir()))


def cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").is_file()


def config_for_host(s: KindSettings, log: Log) -> Path:
    """The config kind gets: charts/kind/kind-config.yaml, plus the cgroup v1 patch where the
    host needs it."""
    try:
        config = yaml.safe_load(s.config.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"KIND_CONFIG {s.config}: {e}") from e
    if not isinstance(config, dict) or config.get("kind") != "Cluster":
        raise ConfigError(f"KIND_CONFIG {s.config}: not a kind Cluster config")
    config["name"] = s.name
    if cgroup_v1():
        log(
            "cgroup v1 host: the kubelet refuses cgroup v1 unless told otherwise, so the "
            "config sets KubeletConfiguration failCgroupV1: false"
        )
        config.setdefault("kubeadmConfigPatches", []).append(CGROUP_V1_PATCH)
    s.home.mkdir(parents=True, exist_ok=True)
    out = s.home / f"{s.name}-config.yaml"
    out.write_text(
        "# Written by `make kind-up` from charts/kind/kind-config.yaml for this host.\n"
        + yaml.safe_dump(config, sort_keys=False)
    )
    return out


def node_image(s: KindSettings, tool: str, log: Log, make_base: Callable[[], str] | None) -> str:
    pinned = pins().kube.kind_node_image
    mode = s.node_image
    if mode not in NODE_IMAGE_MODES:
        return mode  # an image reference
    if mode == "kindest" or (mode == "auto" and (_has_image(tool, pinned) or _registry())):
        log(f"node image: {pinned} (kind's, pinned by digest)")
        return pinned
    if mode == "auto":
        log("node image: no registry answers, so logberg's offline node image is used")
    from logberg_platform.kind import node_image as offline

    ref = offline.build(log, make_base)
    if tool == "docker":
        log(f"node image {ref}: podman save | docker load")
        _pipe(["podman", "save", ref], ["docker", "load"])
    return ref


# -- up and down -------------------------------------------------------------------------------


def up(s: KindSettings, log: Log, make_base: Callable[[], str] | None = None) -> None:
    tool = provider()
    kind = kind_command(s.kind, log)
    log(f"provider: {tool}; kind: {kind}")
    env = kind_env(tool, s.home)
    if s.name in _clusters(kind, env):
        state = _container_state(tool, s.node_container)
        if state == "running":
            log(f"kind cluster '{s.name}' exists and runs")
            return
        raise ServiceError(
            f"kind cluster '{s.name}' exists but its node is {state or 'missing'}: "
            "`make kind-down`, then `make kind-up`"
        )
    image = node_image(s, tool, log, make_base)
    config = config_for_host(s, log)
    _host_modules(s, log)
    argv = [kind, "create", "cluster", "--name", s.name, "--config", str(config),
            "--image", image, "--wait", s.wait]  # fmt: skip
    log("$ " + " ".join(argv))
    proc = subprocess.run(argv, env=env)
    if proc.returncode != 0:
        log("kind create cluster failed: removing what it left")
        down(s, log)
        raise ServiceError(f"kind create cluster exited {proc.returncode} (its output is above)")
    # kubeadm runs two CoreDNS replicas; on kind's one node the second only takes 0.1 CPU of
    # requests from the workloads.
    subprocess.run(
        [tool, "exec", s.node_container, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf",
         "-n", "kube-system", "scale", "deployment/coredns", "--replicas=1"],
        check=False,
    )  # fmt: skip
    log(f"kind cluster '{s.name}': ready (kubectl context kind-{s.name})")


def down(s: KindSettings, log: Log) -> list[str]:
    """Delete the cluster and what it left; what of the cluster's remains (empty: all gone)."""
    try:
        tool = provider()
    except ConfigError as e:
        log(f"nothing to delete: {e}")
        return []
    env = kind_env(tool)
    if s.kind and shutil.which(s.kind) is None:
        raise ConfigError(f"KIND={s.kind}: not found")
    kind = s.kind or shutil.which("kind") or _pinned_kind()
    if kind:  # else no kind ever ran here: only leftovers to look for
        subprocess.run([kind, "delete", "cluster", "--name", s.name], env=env)
    for cid in _lines([tool, "ps", "-aq", "--filter", f"label={CLUSTER_LABEL}={s.name}"]):
        log(f"removing node container {cid}")
        subprocess.run([tool, "rm", "-f", "-v", cid], capture_output=True)
    for vol in _volumes(tool, s):
        log(f"removing volume {vol}")
        subprocess.run([tool, "volume", "rm", "-f", vol], capture_output=True)
    if NETWORK in _lines([tool, "network", "ls", "--format", "{{.Name}}"]):
        others = _lines([tool, "ps", "-aq", "--filter", f"network={NETWORK}"])
        if others:
            log(f"network {NETWORK}: kept ({len(others)} other container(s) use it)")
        else:
            subprocess.run([tool, "network", "rm", NETWORK], capture_output=True)
            log(f"network {NETWORK}: removed")
    record = s.home / "made-lib-modules"
    if record.is_file() and _lines([tool, "ps", "-aq", "--filter", f"label={CLUSTER_LABEL}"]):
        log("/lib/modules: kept (another kind cluster's node mounts it)")
    elif record.is_file():
        try:
            Path("/lib/modules").rmdir()
            log("/lib/modules: removed (kind-up made it)")
        except OSError as e:
            log(f"/lib/modules: kept ({e.strerror})")
        record.unlink()
    return remains(s, tool)


def remains(s: KindSettings, tool: str | None = None) -> list[str]:
    """What of the cluster's is still on the host."""
    try:
        tool = tool or provider()
    except ConfigError:
        return []
    mine = ["--filter", f"label={CLUSTER_LABEL}={s.name}"]
    left = [f"container {c}" for c in _lines([tool, "ps", "-a", "--format", "{{.Names}}", *mine])]
    left += [f"volume {v}" for v in _volumes(tool, s)]
    if NETWORK in _lines([tool, "network", "ls", "--format", "{{.Name}}"]) and not _lines(
        [tool, "ps", "-aq", "--filter", f"network={NETWORK}"]
    ):
        left.append(f"network {NETWORK}")
    return left


def status(s: KindSettings) -> str:
    try:
        tool = provider()
    except ConfigError as e:
        return str(e)
    state = _container_state(tool, s.node_container)
    return f"kind cluster '{s.name}' ({tool}): node {s.node_container} {state or 'absent'}"


# -- helpers -------------------------------------------------------------------------------


def kind_env(tool: str, home: Path | None = None) -> dict[str, str]:
    """The environment kind runs in: the provider found (Docker or podman); for podman with
    `home`, this machine's containers.conf (rlimits it may set, no pids limit: the node
    holds a whole cluster's processes), which kind passes on to podman."""
    env = dict(os.environ, KIND_EXPERIMENTAL_PROVIDER=tool)
    if tool == "podman" and home is not None:
        from logberg_platform.build.container_images.builders import write_containers_conf

        env["CONTAINERS_CONF"] = str(write_containers_conf(home / "containers.conf"))
    return env


def _host_modules(s: KindSettings, log: Log) -> None:
    modules = Path("/lib/modules")
    if modules.exists():
        return
    log("/lib/modules: absent on this host, and kind mounts it: made empty (kind-down removes it)")
    modules.mkdir(parents=True)
    s.home.mkdir(parents=True, exist_ok=True)
    (s.home / "made-lib-modules").write_text("/lib/modules\n")


def _volumes(tool: str, s: KindSettings) -> list[str]:
    if tool != "podman":  # docker's anonymous /var volume goes with `rm -v`
        return []
    return _lines([tool, "volume", "ls", "-q", "--filter", f"label={s.node_container}"])


def _clusters(kind: str, env: dict[str, str]) -> list[str]:
    proc = subprocess.run([kind, "get", "clusters"], env=env, capture_output=True, text=True)
    return proc.stdout.split()


def _container_state(tool: str, name: str) -> str:
    proc = subprocess.run(
        [tool, "inspect", "--type", "container", "--format", "{{.State.Status}}", name],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _has_image(tool: str, ref: str) -> bool:
    return _ok([tool, "image", "inspect", ref])


def _registry() -> bool:
    try:
        urllib.request.urlopen(REGISTRY_PROBE, timeout=5)
    except urllib.error.HTTPError:
        return True  # 401: it answers
    except (OSError, ValueError):
        return False
    return True


def _pinned_kind() -> str | None:
    from logberg_platform.build.kubernetes_cache import tools_dir

    built = tools_dir() / "bin" / "kind"
    return str(built) if built.is_file() else None


def _ok(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _lines(argv: list[str]) -> list[str]:
    proc = subprocess.run(argv, capture_output=True, text=True)
    return [line for line in proc.stdout.split() if line]


def _pipe(left: list[str], right: list[str]) -> None:
    a = subprocess.Popen(left, stdout=subprocess.PIPE)
    assert a.stdout is not None
    b = subprocess.run(right, stdin=a.stdout, capture_output=True, text=True)
    a.stdout.close()
    if a.wait() != 0 or b.returncode != 0:
        raise ServiceError(f"{' '.join(left)} | {' '.join(right)} failed: {b.stderr.strip()}")
