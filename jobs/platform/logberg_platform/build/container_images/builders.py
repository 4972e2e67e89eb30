"""The image builders: docker buildx where a Docker daemon answers, else podman (buildah
underneath), and podman's containers.conf for this machine."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from logberg.errors import ConfigError, ServiceError
from logberg_platform.build.container_images import specs
from logberg_platform.build.container_images.specs import BUILDER_ENV, PULL_TIMEOUT


def say(message: str) -> None:
    print(f"images: {message}", flush=True)


# ------------------------------------------------------------------------------ builders
def write_containers_conf(path: Path) -> Path:
    """podman/buildah settings for this machine, in one file (CONTAINERS_CONF).

    runc where it is installed (crun fails on hybrid-cgroup hosts), and explicit rlimits
    no higher than this process's hard limits (podman's defaults exceed them on VMs where
    the runtime cannot raise limits, and every container start is then refused), and no
    pids limit: a kind node is one container holding a whole cluster's processes, and
    podman's default of 2048 starved its Spark pods ("unable to create native thread")."""
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 16384)
    lines = [
        "# Written by `logberg images containers-conf` (make writes it):",
        "# podman and buildah settings for this machine. Regenerate rather than edit.",
        "[containers]",
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]',
        "pids_limit = 0",
    ]
    runc = shutil.which("runc") or next(
        (p for p in ("/usr/sbin/runc", "/usr/bin/runc") if Path(p).is_file()), None
    )
    if runc:
        lines += ["", "[engine]", 'runtime = "runc"', "", "[engine.runtimes]", f'runc = ["{runc}"]']
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True)
class Builder:
    kind: str  # "docker" | "podman"
    exe: str
    env: Mapping[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: float | None = 600, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.exe, *args],
            env=dict(self.env),
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )
        if check and proc.returncode != 0:
            raise ServiceError(f"{self.kind} {' '.join(args[:3])} failed: {proc.stderr[-2000:]}")
        return proc

    def qualify(self, ref: str) -> str:
        """podman matches a short name against any local repository ending in it, so the
        base is always named in full there (docker.io/library/debian:...), as docker would."""
        if self.kind == "docker":
            return ref
        first = ref.split("/")[0]
        if "/" in ref and ("." in first or ":" in first or first == "localhost"):
            return ref
        return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"

    def exists(self, ref: str) -> bool:
        return self.run("image", "inspect", ref, check=False).returncode == 0

    def inspect(self, ref: str) -> dict[str, Any]:
        data = json.loads(self.run("image", "inspect", ref).stdout)
        return dict(data[0])

    def pull(self, ref: str) -> bool:
        try:
            return self.run("pull", ref, check=False, timeout=PULL_TIMEOUT).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def build_command(
        self,
        dockerfile: Path,
        context: Path,
        tag: str,
        args: Mapping[str, str],
        labels: Mapping[str, str],
        no_cache: bool = False,
    ) -> list[str]:
        flags = [f"--build-arg={k}={v}" for k, v in sorted(args.items())]
        flags += ["--no-cache"] if no_cache else []
        flags += [f"--label={k}={v}" for k, v in sorted(labels.items())]
        if self.kind == "docker":
            head = ["buildx", "build", "--load", "--progress=plain"]
        else:
            head = ["build", "--layers"]
        return [self.exe, *head, "-f", str(dockerfile), "-t", tag, *flags, str(context)]

    def import_command(self, name: str, changes: Sequence[str]) -> list[str]:
        changes_flags = [f"--change={c}" for c in changes]
        return [self.exe, "import", *changes_flags, "-", self.qualify(name)]


def _docker_works(exe: str) -> bool:
    try:
        for args in (["buildx", "version"], ["info", "--format", "{{.ServerVersion}}"]):
            if subprocess.run([exe, *args], capture_output=True, timeout=30).returncode != 0:
                return False
    except (OSError, subprocess.TimeoutExpired):
        return False
    return True


def podman_builder(exe: str = "podman") -> Builder:
    """podman, with the repository's containers.conf (runc; written on first use)."""
    env = dict(os.environ)
    conf = Path(env.get("CONTAINERS_CONF") or specs.repo_root() / ".logberg" / "containers.conf")
    if not conf.is_file():
        write_containers_conf(conf)
    env["CONTAINERS_CONF"] = str(conf)
    return Builder("podman", exe, env)


@cache
def builder() -> Builder:
    """docker buildx where a Docker daemon answers, else podman (LOGBERG_IMAGE_BUILDER)."""
    wanted = os.environ.get(BUILDER_ENV, "auto")
    if wanted not in ("auto", "docker", "podman"):
        raise ConfigError(f"{BUILDER_ENV}={wanted!r}: expected auto, docker or podman")
    docker, podman = shutil.which("docker"), shutil.which("podman")
    if wanted in ("auto", "docker") and docker and _docker_works(docker):
        return Builder("docker", docker, dict(os.environ))
    if wanted == "docker":
        raise ConfigError(
            f"{BUILDER_ENV}=docker: no docker with buildx and a running daemon on this machine"
        )
    if podman:
        return podman_builder(podman)
    raise ConfigError(
        "no container builder: install Docker (with buildx) or podman "
        f"(apt-get install podman buildah runc), or set {BUILDER_ENV}"
    )
