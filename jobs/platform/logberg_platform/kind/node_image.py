"""logberg's kind node image, built offline (`make kind-node-image`): for machines where no
registry answers, so kind's `kindest/node` cannot be pulled and kind's own `build
node-image` (which fetches images too) cannot run.

Three images, all FROM the pinned Debian base and all built with podman:

1. the components (images/kind-components): the project's own builds of the pinned
   control plane, kube-proxy, etcd, CoreDNS, kube-network-policies and the local-path
   provisioner, plus logberg-kind-net, in one image tagged under every name kubeadm's
   manifests and the node's own manifests ask for (one copy of the layers in the node);
   CoreDNS gets a variant whose entrypoint is CoreDNS; the pause image is logberg's own
   (images/pause);
2. their archive (`podman save`), which the node imports into its containerd when it first
   boots (logberg-preload.service, before the kubelet), so the node never pulls;
3. the node (images/kind-node): systemd, containerd, runc and the CNI plugins from Debian,
   the pinned kubelet, kubeadm and kubectl, the entrypoint and the manifests kind applies.

The node's tag is a hash of every input (the node's files, the three images' ids, the
kubelet, kubeadm and kubectl, the base's id), so a changed input is a new tag, and a stale
image is never reused under the pinned version's name.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from logberg.errors import ServiceError
from logberg_platform.build import tools as build_tools
from logberg_platform.build.kubernetes_binaries import ensure_binaries
from logberg_platform.build.kubernetes_cache import NETPOL, kube_pins, tools_dir
from logberg_platform.kind import podman_images
from logberg_platform.supervisor import run

NODE = "localhost/logberg-kind-node"
COMPONENTS = "localhost/logberg-kind-components"
COREDNS = "localhost/logberg-kind-coredns"
# The components image holds these binaries (the build context's bin/).
COMPONENT_BINARIES = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "etcd",
    "coredns",
    NETPOL,
    "local-path-provisioner",
)
# The node holds these (in /usr/bin).
NODE_BINARIES = ("kubelet", "kubeadm", "kubectl")

Log = Callable[[str], None]


@dataclass(frozen=True)
class Preload:
    """The images the node imports at first boot: podman ref -> the names it goes by."""

    names: dict[str, list[str]]

    def refs(self) -> list[str]:
        return [name for names in self.names.values() for name in names]


def build(log: Log, make_base: Callable[[], str] | None = None) -> str:
    """The node image for the pinned Kubernetes, built where it is missing; its reference."""
    pins = kube_pins()
    tools = tools_dir()
    binaries = ensure_binaries(tools, log)
    lpp = build_tools.ensure_local_path_provisioner(tools)
    base = podman_images.base_image(log, make_base)
    images = podman_images.images_dir()

    def binary(name: str) -> Path:
        return lpp if name == "local-path-provisioner" else binaries[name]

    pause = podman_images.build_pause(base, log)
    with tempfile.TemporaryDirectory(prefix="logberg-kind-components-") as tmp:
        ctx = Path(tmp)
        shutil.copy(images / "kind-components" / "Dockerfile", ctx / "Dockerfile")
        (ctx / "bin").mkdir()
        for name in COMPONENT_BINARIES:
            shutil.copy(binary(name), ctx / "bin" / name)
        shutil.copy(images / "kind-components" / "logberg-kind-net", ctx / "bin")
        components = podman_images.build(ctx, COMPONENTS, base[1], log, BASE_IMAGE=base[0])
    variant = images / "kind-components" / "coredns"
    parent = podman_images.image_id(components)
    coredns = podman_images.build(variant, COREDNS, parent, log, COMPONENTS_IMAGE=components)

    wanted = _kubeadm_images(binaries["kubeadm"], pins.tag)
    preload = Preload(
        {
            components: [components, *[w for w in wanted if not _is(w, "coredns", "pause")]],
            coredns: [w for w in wanted if _is(w, "coredns")],
            pause: [w for w in wanted if _is(w, "pause")],
        }
    )
    sandbox = preload.names[pause][0]

    node_src = images / "kind-node"
    digest = hashlib.sha256()
    digest.update(podman_images.content_tag(node_src, base[1]).encode())
    for ref in (components, coredns, pause):
        digest.update(podman_images.image_id(ref).encode())
    for ref in sorted(preload.refs()):
        digest.update(ref.encode())
    for name in NODE_BINARIES:
        digest.update(_file_hash(binaries[name]).encode())
    ref = f"{NODE}:{pins.tag}-{digest.hexdigest()[:12]}"
    if podman_images.podman_has(ref):
        log(f"kind node image {ref}: present")
        return ref

    log(f"kind node image {ref}: building (preloads {', '.join(sorted(preload.refs()))})")
    for image, names in preload.names.items():
        for name in names:
            if name != image:
                run(["podman", "tag", image, name])
    with tempfile.TemporaryDirectory(prefix="logberg-kind-node-") as tmp:
        ctx = Path(tmp)
        shutil.copy(node_src / "Dockerfile", ctx / "Dockerfile")
        shutil.copytree(node_src / "rootfs", ctx / "rootfs", symlinks=True)
        (ctx / "bin").mkdir()
        for name in NODE_BINARIES:
            shutil.copy(binaries[name], ctx / "bin" / name)
        archive = ctx / "rootfs" / "kind" / "images" / "preload.tar"
        archive.parent.mkdir(parents=True, exist_ok=True)
        log(f"podman save: the preloaded images -> {archive.name}")
        run(
            ["podman", "save", "--multi-image-archive", "--format", "docker-archive",
             "--output", str(archive), *preload.refs()],
            timeout=900,
        )  # fmt: skip
        podman_images.podman_build(
            ctx,
            ref,
            base[0],
            KUBE_VERSION=pins.tag,
            PAUSE_IMAGE=sandbox,
            COMPONENTS_IMAGE=components,
        )
    log(f"kind node image {ref}: built")
    for name, keep in ((NODE, ref), (COMPONENTS, components), (COREDNS, coredns)):
        _prune(name, keep, log)
    return ref


def _prune(name: str, keep: str, log: Log) -> None:
    """Remove the older builds of `name` (1 GB each for the node); one a container still
    runs stays (podman refuses)."""
    listed = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", name],
        capture_output=True,
        text=True,
    ).stdout.split()
    # The filter lists every name of a matching image (the preload's registry.k8s.io ones
    # too): only this name's other tags go.
    for old in sorted(r for r in set(listed) - {keep} if r.startswith(f"{name}:")):
        if subprocess.run(["podman", "rmi", old], capture_output=True).returncode == 0:
            log(f"image {old}: removed (an older build)")


def _kubeadm_images(kubeadm: Path, version: str) -> list[str]:
    """The images kubeadm runs for this version (control plane, kube-proxy, etcd, CoreDNS,
    pause), as it names them."""
    proc = subprocess.run(
        [str(kubeadm), "config", "images", "list", f"--kubernetes-version={version}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ServiceError(f"kubeadm config images list failed: {proc.stderr.strip()}")
    names = proc.stdout.split()
    if not any(_is(n, "pause") for n in names) or not any(_is(n, "coredns") for n in names):
        raise ServiceError(f"kubeadm config images list named no pause or CoreDNS: {names}")
    return names


def _is(ref: str, *names: str) -> bool:
    return ref.rsplit("/", 1)[-1].split(":", 1)[0] in names


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
