"""The podman builds of the kind node image (logberg_platform.kind.node_image): the Debian base
they build FROM, a tag by content, and the pause image (images/pause).

Each builds with podman FROM the Debian base the other images use: the pinned digest
(versions.toml [base]) where podman has it, else the same release by its plain name, made
here with debootstrap when podman has neither (as `make base-images` does). A tag is a hash
of everything in the build context and of the base's image id, so a changed binary,
Dockerfile or base is a new tag and the node's containerd can never keep serving an old
image under the same name.
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
    without a registry needs no step before `make kind-node-image`."""
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


def build(context: Path, name: str, parent_id: str, log: Log, **build_args: str) -> str:
    """`name:<hash of the context and of the parent image's id>`, built where podman lacks it."""
    ref = f"{name}:{content_tag(context, parent_id)}"
    if podman_has(ref):
        log(f"image {ref}: present")
        return ref
    log(f"image {ref}: podman build")
    podman_build(context, ref, **build_args)
    return ref
