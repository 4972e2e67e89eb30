"""Content tags: an image's tag is a hash of everything its build reads (the staged
context, the build arguments, the base), and the staged context itself."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError
from logberg_platform.build.container_images import specs
from logberg_platform.build.container_images.base import Base, require_base
from logberg_platform.build.container_images.builders import Builder, builder
from logberg_platform.build.container_images.specs import (
    BUILDER_ARGS,
    SPECS,
    Spec,
    context_paths,
    declared_args,
    logberg_version,
    pin_args,
    raw_pins,
    spec,
)


# ---------------------------------------------------------------------------------- tags
@dataclass(frozen=True)
class Plan:
    spec: Spec
    tag: str
    args: dict[str, str]
    files: list[str]
    inputs: str  # the full input hash


def build_args(
    s: Spec, p: Mapping[str, Any], base: Base, tags: Mapping[str, str], context_hash: str = ""
) -> dict[str, str]:
    """The build arguments of one image: its declared ARGs, valued from versions.toml, and
    CONTEXT_HASH, the hash of the staged files. A RUN that bind-mounts the context names
    it, because buildah keys its layer cache on the command, not on what a mount holds:
    without it, a changed package would reuse the old layer under a new tag."""
    values = {**pin_args(p), "BASE_IMAGE": base.ref, "CONTEXT_HASH": context_hash}
    if "spark" in tags:
        values["SPARK_IMAGE"] = tags["spark"]
    out: dict[str, str] = {}
    for arg, default in declared_args(specs.repo_root() / s.dockerfile).items():
        if arg in values:
            out[arg] = str(values[arg])
        elif arg not in BUILDER_ARGS and default is None:
            raise ConfigError(f"{s.dockerfile}: ARG {arg} has no default and no value")
    return out


def plan(s: Spec, b: Builder, p: Mapping[str, Any], base: Base) -> Plan:
    """The tag of an image for the inputs as they are now (nothing is built)."""
    tags = {need: plan(SPECS[need], b, p, base).tag for need in s.needs}
    files = context_paths(s)
    root = specs.repo_root()
    sources = {rel: root / rel for rel in files} | {rel: fn() for rel, fn in s.extras.items()}
    content = hashlib.sha256()
    for rel, path in sorted(sources.items()):
        data = path.read_bytes()
        executable = os.access(path, os.X_OK)
        content.update(f"file\0{rel}\0{int(executable)}\0{len(data)}\0".encode())
        content.update(data)
    args = build_args(s, p, base, tags, content.hexdigest())
    h = hashlib.sha256(f"{s.name}\0{base.image_id}\0".encode())
    for key, value in sorted(args.items()):
        h.update(f"arg\0{key}\0{value}\0".encode())
    h.update(content.digest())
    digest = h.hexdigest()
    return Plan(s, f"{s.name}:{logberg_version()}-{digest[:12]}", args, sorted(sources), digest)


def current_tag(name: str) -> str:
    b = builder()
    p = raw_pins()
    return plan(spec(name), b, p, require_base(b, p)).tag


@contextmanager
def staged(pl: Plan) -> Iterator[Path]:
    """The build context: exactly the planned files, in a private folder."""
    root = specs.repo_root()
    with tempfile.TemporaryDirectory(prefix="logberg-context-") as tmp:
        ctx = Path(tmp)
        for rel in pl.files:
            src = pl.spec.extras[rel]() if rel in pl.spec.extras else root / rel
            dst = ctx / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        yield ctx
