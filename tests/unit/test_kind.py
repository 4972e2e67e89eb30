"""kind's preflight and the config `make kind-up` passes kind (logberg_platform.kind.cluster),
run as the CLI runs them: what is missing is named before anything is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from logberg.errors import ConfigError
from logberg_platform.kind import cluster
from tests.conftest import REPO


def settings(tmp_path: Path, **kw: str) -> cluster.KindSettings:
    return cluster.KindSettings(
        name=kw.get("name", "t"),
        config=REPO / "charts" / "kind" / "kind-config.yaml",
        home=tmp_path / "kind",
        node_image=kw.get("node_image", "auto"),
        kind=kw.get("kind", ""),
    )


def test_config_gets_the_cgroup_v1_patch_only_where_the_host_is_v1(tmp_path: Path) -> None:
    said: list[str] = []
    out = cluster.config_for_host(settings(tmp_path, name="other"), said.append)
    config = yaml.safe_load(out.read_text())
    assert config["name"] == "other" and config["kind"] == "Cluster"
    assert [n["role"] for n in config["nodes"]] == ["control-plane"]
    patches = [yaml.safe_load(p) for p in config.get("kubeadmConfigPatches", [])]
    v1 = not Path("/sys/fs/cgroup/cgroup.controllers").is_file()
    wanted = {"kind": "KubeletConfiguration", "failCgroupV1": False}
    assert (wanted in patches) is v1
    assert any("failCgroupV1: false" in s for s in said) is v1


def test_a_config_that_is_not_kinds_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n")
    s = cluster.KindSettings("t", bad, tmp_path / "kind")
    with pytest.raises(ConfigError, match=f"KIND_CONFIG {bad}: not a kind Cluster config"):
        cluster.config_for_host(s, print)


def cli(tmp_path: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=path, LOGBERG_HOME=str(tmp_path / "home"))
    env.pop("KIND", None)
    return subprocess.run(
        [str(Path(sys.executable).parent / "logberg"), "kind", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_up_without_docker_or_podman_names_both_and_makes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = cli(tmp_path, "up", "--name", "t", path=str(empty))
    assert proc.returncode == 2, proc.stderr
    assert "kind needs Docker or podman" in proc.stderr and "podman" in proc.stderr
    assert not (tmp_path / "home").exists()


def test_up_with_a_podman_too_old_for_kind_says_so(tmp_path: Path) -> None:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    old = bin_ / "podman"  # a podman that reports an old release
    old.write_text("#!/bin/sh\necho 'podman version 3.4.4'\n")
    old.chmod(0o755)
    proc = cli(tmp_path, "up", "--name", "t", path=f"{bin_}:/usr/bin:/bin")  # no docker
    assert proc.returncode == 2, proc.stderr
    assert "podman 3.4 is too old for kind's podman provider" in proc.stderr


def test_kind_names_a_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KIND=/nonexistent/kind: not found"):
        cluster.kind_command("/nonexistent/kind", print)
