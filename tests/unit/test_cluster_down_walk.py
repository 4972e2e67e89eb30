"""`cluster down` walks the runtime's state while pods stop: folders vanish under it.

A fresh-clone CI failed once when `Path.rglob` entered a container's root file system
(`io.containerd.runtime.v2.task/k8s.io/<id>/rootfs/...`) as the task was being removed.
Here the removal happens deterministically, between listing a folder and entering it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from logberg_platform.cluster import lifecycle
from logberg_platform.cluster.cluster_settings import ClusterSettings


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    cri = state / "io.containerd.grpc.v1.cri" / "netns"
    cri.mkdir(parents=True)
    (cri / "cni-1111").write_text("")
    (cri / "cni-2222").write_text("")
    rootfs = state / lifecycle.TASKS_DIR / "k8s.io" / "abc" / "rootfs" / "usr" / "share" / "doc"
    (rootfs / "hostname").mkdir(parents=True)
    (rootfs.parent.parent.parent / "netns").mkdir()  # a container's own /netns: not a pod's
    (rootfs.parent.parent.parent / "netns" / "decoy").write_text("")
    return state


def _removing(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    """Remove `victim` right after its parent has been listed, as a stopping task does."""
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, int) or Path(os.fspath(path)) != victim.parent or not victim.exists():
            return real(path)
        with real(path) as it:
            entries = list(it)
        shutil.rmtree(victim)
        return _Listed(entries)

    monkeypatch.setattr(os, "scandir", scandir)


class _Listed:
    """What `os.scandir` returns: an iterator that is also a context manager."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._it = iter(entries)

    def __iter__(self) -> _Listed:
        return self

    def __next__(self) -> os.DirEntry[str]:
        return next(self._it)

    def __enter__(self) -> _Listed:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass


def test_netns_lists_the_pod_namespaces_and_skips_the_tasks_root_file_systems(
    tmp_path: Path,
) -> None:
    s = cast(ClusterSettings, SimpleNamespace(containerd_state=_state(tmp_path)))
    assert sorted(p.name for p in lifecycle._netns(s)) == ["cni-1111", "cni-2222"]


def test_netns_of_a_state_folder_that_is_gone_is_empty(tmp_path: Path) -> None:
    s = cast(ClusterSettings, SimpleNamespace(containerd_state=tmp_path / "gone"))
    assert lifecycle._netns(s) == []


def test_a_folder_removed_during_the_walk_is_skipped_where_rglob_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _state(tmp_path)
    victim = state / lifecycle.TASKS_DIR / "k8s.io" / "abc" / "rootfs" / "usr" / "share" / "doc"
    keep = [p.name for p in lifecycle._files(state)]
    assert "decoy" in keep  # `_files` itself enters every folder it is not told to skip
    (victim / "hostname" / "f").write_text("")
    _removing(monkeypatch, victim / "hostname")
    with pytest.raises(FileNotFoundError):
        list(state.rglob("netns/*"))  # the failure the CI saw
    (victim / "hostname").mkdir()
    (victim / "hostname" / "f").write_text("")
    assert "f" not in [p.name for p in lifecycle._files(state)]
