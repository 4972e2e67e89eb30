"""The container tier's shared parts: the container engine (podman here; docker where it
runs) on a private `--internal` network, and the images at their current tags."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pytest

from logberg.errors import ConfigError
from logberg_platform.build import container_images as images

PREFIX = f"logberg-ctest-{os.getpid()}"
JOB_TIMEOUT = 1500.0
ALL_IMAGES = ("spark", "hive-metastore", "spark-operator", "dev-postgres", "dev-s3", "dev-kafka")


# ---------------------------------------------------------------------------- the engine
@dataclass
class Engine:
    """The docker/podman CLI, with this machine's settings (CONTAINERS_CONF)."""

    builder: images.Builder
    network: str = ""
    # name -> address of each long-running container, written into every later
    # container's /etc/hosts (see `engine`: names never depend on podman's name server).
    hosts: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        timeout: float = 600,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.builder.exe, *args],
            env={**self.builder.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{self.builder.kind} {' '.join(args[:6])} failed ({proc.returncode}):\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return proc

    def container_args(
        self,
        name: str,
        env: Mapping[str, str] | None = None,
        secrets_env: Mapping[str, str] | None = None,
        mounts: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Flags for a container on the test network. Secret values are passed by name
        only (`-e NAME`: taken from the CLI's environment, never on a command line)."""
        out = ["--name", name, "--network", self.network]
        for host, address in self.hosts.items():
            out += ["--add-host", f"{host}:{address}"]
        for k, v in (env or {}).items():
            out += ["-e", f"{k}={v}"]
        for k in secrets_env or {}:
            out += ["-e", k]
        for host, target in (mounts or {}).items():
            out += ["-v", f"{host}:{target}"]
        return out

    def start(
        self,
        image: str,
        *command: str,
        name: str,
        env: Mapping[str, str] | None = None,
        secrets_env: Mapping[str, str] | None = None,
        mounts: Mapping[str, str] | None = None,
    ) -> str:
        args = self.container_args(name, env, secrets_env, mounts)
        self.run("run", "-d", *args, image, *command, env=secrets_env)
        self.hosts[name] = self.ip(name)
        return name

    def once(
        self,
        image: str,
        *command: str,
        name: str,
        env: Mapping[str, str] | None = None,
        secrets_env: Mapping[str, str] | None = None,
        mounts: Mapping[str, str] | None = None,
        timeout: float = JOB_TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        """Run a container to its end (removed afterwards); returns its exit and output."""
        args = self.container_args(name, env, secrets_env, mounts)
        try:
            return self.run(
                "run", "--rm", *args, image, *command, env=secrets_env, timeout=timeout, check=False
            )
        finally:
            self.run("rm", "-f", "-t", "0", name, check=False)

    def ip(self, name: str) -> str:
        out = self.run("inspect", "-f", "{{json .NetworkSettings.Networks}}", name).stdout
        return str(json.loads(out)[self.network]["IPAddress"])

    def running(self, name: str) -> bool:
        out = self.run("inspect", "-f", "{{.State.Running}}", name, check=False).stdout
        return out.strip() == "true"

    def logs(self, name: str) -> str:
        proc = self.run("logs", name, check=False)
        return proc.stdout + proc.stderr

    def remove(self, name: str) -> None:
        self.run("rm", "-f", "-t", "5", name, check=False)


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    try:
        b = images.builder()
    except ConfigError as missing:
        pytest.skip(f"no container runtime on this machine: {missing}")
    eng = Engine(b, network=f"{PREFIX}-net")
    # Names come from each container's /etc/hosts (`Engine.hosts`), which glibc reads
    # before asking podman's name server: aardvark-dns, reloaded as containers come and go,
    # twice left the metastore unable to resolve the S3 server's name mid-run (CI). The
    # network keeps its name server all the same: without one, podman gives an internal
    # network no gateway address on this machine, and this machine could not reach it.
    eng.run("network", "create", "--internal", eng.network)
    try:
        yield eng
    finally:
        names = eng.run("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
        for name in names:
            if name.startswith(PREFIX):
                eng.remove(name)
        eng.run("network", "rm", eng.network, check=False)


@pytest.fixture(scope="session")
def tags(engine: Engine) -> dict[str, str]:
    """The images at their current tags (built here only if `make test-images` did not)."""
    return images.build(ALL_IMAGES)
