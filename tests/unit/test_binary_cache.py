"""The machine's cache of the cluster's linked binaries (logberg_platform.build.binary_cache):
a build kept once is copied into a fresh clone's .tools; anything it was built from changing
misses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from logberg_platform.build import binary_cache
from logberg_platform.build.kubernetes_cache import complete

KEY = '{"recipe": "3", "coredns": "1.14.2"}'


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(binary_cache.CACHE_ENV, str(root))
    return root


def built(bindir: Path, key: str = KEY) -> Path:
    bindir.mkdir(parents=True)
    (bindir / "coredns").write_bytes(b"\x7fELF coredns")
    (bindir / "coredns").chmod(0o755)
    (bindir / ".built").write_text(key)
    return bindir


def recipe(tmp_path: Path, text: str) -> tuple[Path, ...]:
    source = tmp_path / "recipe.py"
    source.write_text(text)
    return (source,)


def test_a_kept_build_fills_a_fresh_clone(tmp_path: Path, cache: Path) -> None:
    where = binary_cache.entry("coredns", KEY, "go1.26.0", recipe(tmp_path, "build()"))
    assert where.is_relative_to(cache)
    first = built(tmp_path / "clone1" / ".tools" / "coredns" / "1.14.2" / "bin")
    binary_cache.store(where, first)
    fresh = tmp_path / "clone2" / ".tools" / "coredns" / "1.14.2" / "bin"
    assert binary_cache.restore(where, fresh, KEY, ("coredns",))
    assert complete(fresh, KEY, ("coredns",))
    assert (fresh / "coredns").read_bytes() == b"\x7fELF coredns"
    assert not list(fresh.parent.glob("*.restoring"))


def test_what_a_build_comes_from_names_its_entry(tmp_path: Path) -> None:
    source = recipe(tmp_path, "build()")
    where = binary_cache.entry("coredns", KEY, "go1.26.0", source)
    assert binary_cache.entry("coredns", KEY, "go1.26.0", source) == where
    assert binary_cache.entry("coredns", KEY, "go1.26.1", source) != where
    assert binary_cache.entry("coredns", KEY + " ", "go1.26.0", source) != where
    assert binary_cache.entry("netpol", KEY, "go1.26.0", source) != where
    changed = binary_cache.entry("coredns", KEY, "go1.26.0", recipe(tmp_path, "build(-N)"))
    assert changed != where


def test_an_incomplete_or_other_entry_is_not_restored(tmp_path: Path) -> None:
    where = binary_cache.entry("coredns", KEY, "go1.26.0", recipe(tmp_path, "build()"))
    fresh = tmp_path / "fresh" / "bin"
    assert not binary_cache.restore(where, fresh, KEY, ("coredns",))  # nothing kept yet
    binary_cache.store(where, built(tmp_path / "one" / "bin"))
    assert not binary_cache.restore(where, fresh, '{"recipe": "4"}', ("coredns",))
    assert not binary_cache.restore(where, fresh, KEY, ("coredns", "kube-apiserver"))
    assert not fresh.exists()


def test_each_kind_keeps_its_newest_entries(tmp_path: Path) -> None:
    entries = []
    for n in range(binary_cache.KEEP + 2):
        where = binary_cache.entry("coredns", KEY, f"go1.26.{n}", recipe(tmp_path, "build()"))
        binary_cache.store(where, built(tmp_path / f"b{n}" / "bin"))
        entries.append(where)
    other = binary_cache.entry("kubernetes", KEY, "go1.26.0", recipe(tmp_path, "build()"))
    binary_cache.store(other, built(tmp_path / "k" / "bin"))
    kept = sorted(p for p in entries[0].parent.iterdir())
    assert kept == sorted(entries[-binary_cache.KEEP :])
    assert other.is_dir()
