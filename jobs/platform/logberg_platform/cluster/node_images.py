"""The two infrastructure images the cluster needs (pause, CoreDNS), and loading images
into the node's containerd.

Both build with podman FROM the Debian base the other images use: the pinned digest
(versions.toml [base]) where podman has it, else the same release by its plain name, made
here with debootstrap when podman has neither (as `make base-images` does). Their tag is a
hash of everything in the build context and of the base's image id, so a changed binary,
Dockerfile or base is a new tag and containerd can never keep serving an old image under
the same name.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from logberg.errors import ConfigError, ServiceError
from logberg.versions import pins
from logberg_platform.supervisor import run

REPO_IMAGES = Path(__file__).resolve().parents[4] / "images"
PAUSE = "localhost/logberg-pause"
COREDNS = "localhost/logberg-coredns"
NAMESPACE = "k8s.io"  # containerd namespace of the CRI plugin

Log = Callable[[str], None]


def images_dir() -> Path:
    if not (REPO_IMAGES / "pause" / "Dockerfile").is_file():
        raise ConfigError(
            f"images/ not found at {REPO_IMAGES}: run from a checkout of the repository"
        )
    return REPO_IMAGES


def content_tag(context: Path, base_id: str = "") -> str:
    digest = hashlib.sha256(base_id.encode() + b"\0")
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(path.relative_to(context).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def podman_build(context: Path, ref: str, base: str = "", **build_args: str) -> None:
    """Build one image with podman (`base`: its BASE_IMAGE build argument). The rlimits of
    RUN steps come from CONTAINERS_CONF: this host's root may not raise them."""
    args = {"BASE_IMAGE": base, **build_args} if base else build_args
    run(
        [
            "podman", "--runtime", "runc", "build", "--pull=never",
            *(f"--build-arg={k}={v}" for k, v in args.items()),
            "-f", str(context / "Dockerfile"), "-t", ref, str(context),
        ],
        timeout=1800,
    )  # fmt: skip


def podman_has(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref], capture_output=True).returncode == 0


def base_image(log: Log, make: Callable[[], str] | None = None) -> tuple[str, str]:
    """(what FROM gets, its image id): the pinned base, else the same release by name. Where
    podman has neither, `make()` gets it and returns its name (the CLI passes the images
    builder's way: a pull by digest, else debootstrap, as `make base-images`), so a machine
    without a registry needs no step before `cluster-up`."""
    p = pins()
    for ref in (p.base, p.base_name):
        if podman_has(ref):
            return ref, image_id(ref)
    if make is None:
        raise ServiceError(
            f"podman has neither {p.base} nor {p.base_name}. Where no registry answers, "
            "`make base-images` makes the base with debootstrap and imports it under that name"
        )
    log(f"podman has neither {p.base} nor {p.base_name}: making the base")
    ref = make()
    return ref, image_id(ref)


def image_id(ref: str) -> str:
    return run(["podman", "image", "inspect", "--format", "{{.Id}}", ref]).strip()


def build_pause(base: tuple[str, str], log: Log) -> str:
    src = images_dir() / "pause"
    with tempfile.TemporaryDirectory(prefix="logberg-pause-") as tmp:
        ctx = Path(tmp)
        shutil.copy(src / "Dockerfile", ctx / "Dockerfile")
        run(
            ["gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror",
             "-o", str(ctx / "pause"), str(src / "pause.c")]
        )  # fmt: skip
        return build(ctx, PAUSE, base[1], log, BASE_IMAGE=base[0])


def build_coredns(coredns_binary: Path, base: tuple[str, str], log: Log) -> str:
    src = images_dir() / "coredns"
    with tempfile.TemporaryDirectory(prefix="logberg-coredns-") as tmp:
        ctx = Path(tmp)
        shutil.copy(src / "Dockerfile", ctx / "Dockerfile")
        shutil.copy(coredns_binary, ctx / "coredns")
        return build(ctx, COREDNS, base[1], log, BASE_IMAGE=base[0])


def build(context: Path, name: str, parent_id: str, log: Log, **build_args: str) -> str:
    """`name:<hash of the context and of the parent image's id>`, built where podman lacks it."""
    ref = f"{name}:{content_tag(context, parent_id)}"
    if podman_has(ref):
        log(f"image {ref}: present")
        return ref
    log(f"image {ref}: podman build")
    podman_build(context, ref, **build_args)
    return ref


# -- containerd -------------------------------------------------------------------------------


def ctr_argv(socket: Path, *args: str) -> list[str]:
    """`ctr` on the node's containerd (`socket`), in the CRI plugin's namespace."""
    return ["ctr", "--address", str(socket), "-n", NAMESPACE, *args]


def ctr(socket: Path, *args: str, timeout: float = 300) -> str:
    return run(ctr_argv(socket, *args), timeout=timeout)


def containerd_has(socket: Path, ref: str) -> bool:
    return ref in ctr(socket, "images", "ls", "-q").split()


def stream_import(socket: Path, refs: list[str], timeout: float = 900) -> None:
    """`podman save` piped into `ctr images import -`: one docker archive of the images (the
    layers they share written once), imported as it is written, never stored on disk."""
    save = ["podman", "save", "--multi-image-archive", "--format", "docker-archive", *refs]
    load_ = ctr_argv(socket, "images", "import", "-")
    with tempfile.TemporaryFile() as save_err:
        saver = subprocess.Popen(save, stdout=subprocess.PIPE, stderr=save_err)
        assert saver.stdout is not None
        try:
            loader = subprocess.run(
                load_, stdin=saver.stdout, capture_output=True, text=True, timeout=timeout
            )
        finally:
            saver.stdout.close()  # a loader that stopped reading ends the writer (SIGPIPE)
            try:
                saver.wait(timeout=60)
            except subprocess.TimeoutExpired:
                saver.kill()
                saver.wait()
        save_err.seek(0)
        said = save_err.read().decode(errors="replace").strip()
    failed = [
        f"{what} failed (exit {code}): {text.strip()[-2000:]}"
        for what, code, text in (
            (f"podman save {' '.join(refs)}", saver.returncode, said),
            ("ctr images import", loader.returncode, loader.stderr or loader.stdout),
        )
        if code != 0
    ]
    if failed:  # both, when one side's failure broke the pipe for the other
        raise ServiceError("; ".join(failed))


def load(
    socket: Path,
    refs: list[str],
    log: Log,
    also_as: Callable[[str], list[str]] | None = None,
) -> None:
    """Import podman images into containerd (skipping those it already has). `also_as(ref)`
    names further references for the same image (`ctr images tag --force`), e.g. the
    docker.io/library/<ref> a pod's `image: <ref>` resolves to. The missing images go in
    one stream from `podman save` into `ctr images import -` (nothing written to disk): the
    layers they share (the Spark image under the operator's) are sent and unpacked once."""
    full = {ref: ref if "/" in ref.split(":")[0] else f"localhost/{ref}" for ref in refs}
    missing = [f for f in full.values() if not containerd_has(socket, f)]
    for ref in refs:
        if full[ref] not in missing:
            log(f"image {full[ref]}: already in the node")
    for f in missing:
        if not podman_has(f):
            raise ConfigError(f"image {f} not found in podman (podman images)")
    if missing:
        log(f"images {' '.join(missing)}: importing into containerd")
        stream_import(socket, missing)
    for ref in refs:
        if not containerd_has(socket, full[ref]):
            raise ServiceError(f"ctr images import did not register {full[ref]}")
        for alias in also_as(ref) if also_as else []:
            ctr(socket, "images", "tag", "--force", full[ref], alias)
