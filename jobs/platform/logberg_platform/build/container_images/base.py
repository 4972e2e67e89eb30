"""The Debian base every image builds FROM: the pinned digest where it can be pulled, else
the same release made here with debootstrap."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError, ServiceError
from logberg_platform.build.container_images.builders import Builder, say
from logberg_platform.build.container_images.specs import (
    BASE_ENV,
    BASE_LABEL,
    MIRROR_ENV,
    SECURITY_MIRROR_ENV,
    pinned_base,
)


# ---------------------------------------------------------------------------------- base
@dataclass(frozen=True)
class Base:
    ref: str  # what FROM gets (BASE_IMAGE)
    image_id: str  # "" when the builder pulls it by digest itself
    source: str  # "pinned" | "debootstrap" | "local" | BASE_ENV


def find_base(b: Builder, p: Mapping[str, Any], pull: bool) -> Base | None:
    """The base the images build on, if it is here (or, with pull, can be pulled)."""
    override = os.environ.get(BASE_ENV)
    if override:
        override = b.qualify(override)
        if b.exists(override) or (pull and b.pull(override)):
            return Base(override, str(b.inspect(override)["Id"]), BASE_ENV)
        raise ConfigError(f"{BASE_ENV}={override}: no such image, and it cannot be pulled")
    pinned, name = b.qualify(pinned_base(p)), b.qualify(p["base"]["image"])
    if b.exists(pinned):
        return Base(pinned, "", "pinned")
    local = b.inspect(name) if b.exists(name) else None
    labels = ((local or {}).get("Config") or {}).get("Labels") or {}
    if local and labels.get(BASE_LABEL) == "debootstrap":
        return Base(name, str(local["Id"]), "debootstrap")
    if b.kind == "docker":
        return Base(pinned, "", "pinned")  # BuildKit pulls it by digest
    if pull and b.pull(pinned):
        return Base(pinned, "", "pinned")
    if local:  # made here some other way; no registry to compare it with
        return Base(name, str(local["Id"]), "local")
    return None


def resolve_base(b: Builder, p: Mapping[str, Any]) -> Base:
    found = find_base(b, p, pull=True)
    if found:
        return found
    say(f"no registry answers for {pinned_base(p)}: making the base with debootstrap")
    return make_base(b, p)


def require_base(b: Builder, p: Mapping[str, Any]) -> Base:
    found = find_base(b, p, pull=False)
    if found is None:
        raise ConfigError(
            f"no base image {p['base']['image']} here yet: run `make base-images` or `make images`"
        )
    return found


SLIM_DPKG = """\
# Written by logberg's base image build: keep documentation out, as debian:*-slim does.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
"""
SLIM_APT = """\
// Written by logberg's base image build: no package caches or translations in layers.
APT::Keep-Downloaded-Packages "false";
Acquire::Languages "none";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""


def _slim(rootfs: Path) -> None:
    (rootfs / "etc/dpkg/dpkg.cfg.d/logberg-slim").write_text(SLIM_DPKG)
    (rootfs / "etc/apt/apt.conf.d/logberg-slim").write_text(SLIM_APT)
    for sub in ("man", "info", "locale", "groff", "lintian", "linda"):
        folder = rootfs / "usr/share" / sub
        if folder.is_dir():
            shutil.rmtree(folder)
            folder.mkdir()
    for doc in (rootfs / "usr/share/doc").glob("*"):
        if doc.is_dir() and not doc.is_symlink():
            for item in doc.iterdir():
                if item.name == "copyright":
                    continue
                if item.is_dir() and not item.is_symlink():
                    shutil.rmtree(item)
                else:
                    item.unlink()
    for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb"):
        for f in rootfs.glob(pattern):
            if f.is_file():
                f.unlink()
    for log in rootfs.glob("var/log/**/*"):
        if log.is_file():
            log.unlink()
    for name in ("etc/resolv.conf", "etc/hostname"):
        (rootfs / name).write_text("")  # the runtime provides both


def make_base(b: Builder, p: Mapping[str, Any], rebuild: bool = False) -> Base:
    """Make the pinned base's name here: debootstrap --variant=minbase, slimmed like the
    official image, with this host's local CA certificates, imported under the same name."""
    base = p["base"]
    name, suite = b.qualify(base["image"]), base["suite"]
    if not rebuild and b.exists(name):
        info = b.inspect(name)
        say(f"base {name} exists (image {str(info['Id'])[:19]}); `base --rebuild` remakes it")
        return Base(name, str(info["Id"]), "debootstrap")
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").is_file() else None
    )
    if debootstrap is None:
        raise ConfigError("making the base needs debootstrap: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise ConfigError("making the base runs debootstrap, which needs root")
    mirror = os.environ.get(MIRROR_ENV, "http://deb.debian.org/debian")
    security = os.environ.get(SECURITY_MIRROR_ENV, "http://deb.debian.org/debian-security")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logberg-base-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        say(f"base: debootstrap --variant=minbase {suite} from {mirror} ({MIRROR_ENV})")
        _checked([debootstrap, "--variant=minbase", suite, str(rootfs), mirror], "debootstrap")
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(
            f"Types: deb\nURIs: {mirror}\nSuites: {suite} {suite}-updates\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
            f"Types: deb\nURIs: {security}\nSuites: {suite}-security\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        )
        # A proxy that intercepts TLS is trusted through the host's local CAs; the images'
        # ca-certificates package picks them up from here.
        cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
        (rootfs / "usr/local/share/ca-certificates").mkdir(parents=True, exist_ok=True)
        for ca in cas:
            shutil.copy2(ca, rootfs / "usr/local/share/ca-certificates" / ca.name)
        say(f"base: {len(cas)} local CA certificate(s) from /usr/local/share/ca-certificates")
        say(f"base: apt-get upgrade ({suite}-updates, {suite}-security)")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"}
        _checked(["chroot", str(rootfs), "apt-get", "update", "-qq"], "apt-get update", env)
        _checked(["chroot", str(rootfs), "apt-get", "-qq", "-y", "upgrade"], "apt-get upgrade", env)
        _checked(["chroot", str(rootfs), "apt-get", "clean"], "apt-get clean", env)
        _slim(rootfs)
        changes = [
            'CMD ["bash"]',
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            f"LABEL {BASE_LABEL}=debootstrap",
            f"LABEL dev.logberg.base.suite={suite}",
        ]
        say(f"base: importing as {name}")
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(rootfs), "--exclude=./dev/*", "-c", "."],
            stdout=subprocess.PIPE,
        )
        imported = subprocess.run(
            b.import_command(name, changes),
            stdin=tar.stdout,
            env=dict(b.env),
            capture_output=True,
            text=True,
        )
        if tar.stdout:
            tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise ServiceError(f"importing the base failed: {imported.stderr[-2000:]}")
    info = b.inspect(name)
    say(f"base: {name} made in {time.monotonic() - started:.0f}s (image {str(info['Id'])[:19]})")
    return Base(name, str(info["Id"]), "debootstrap")


def _checked(cmd: list[str], what: str, env: Mapping[str, str] | None = None) -> None:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=None if env is None else dict(env)
    )
    if proc.returncode != 0:
        raise ServiceError(f"{what} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
