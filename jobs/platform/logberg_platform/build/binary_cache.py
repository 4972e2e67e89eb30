"""The machine's cache of the kind node image's linked binaries, beside Go's own build cache.

Go's cache holds compiled packages, not linked programs, and a fresh clone's `.tools` is
empty: so every clone linked the six Kubernetes binaries, CoreDNS and kube-network-policies
again (2-3 minutes of a CI run on a machine whose Go cache was warm). Here a build's bin
folder is kept under `$LOGBERG_BUILD_CACHE` (default `~/.cache/logberg/builds`) and copied
into `.tools` by the next clone that needs the same build.

An entry is named by a digest of everything the binaries come from: the build's stamp (its
pins and recipe), the Go toolchain that builds it, and the source of the modules that hold
the recipe (a change to how they build misses the cache, bumped RECIPE or not). Each kind
keeps its newest KEEP entries.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CACHE_ENV = "LOGBERG_BUILD_CACHE"
KEEP = 2
STAMP = ".built"  # the stamp a bin folder's build wrote (kubernetes_cache.complete reads it)


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "logberg" / "builds"


def toolchain(go: str) -> str:
    proc = subprocess.run([go, "version"], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def entry(kind: str, key: str, go_version: str, recipe: tuple[Path, ...]) -> Path:
    """The entry of one build: kind, its stamp, the toolchain and the recipe's source files."""
    h = hashlib.sha256(f"{kind}\0{key}\0{go_version}\0".encode())
    for source in recipe:
        h.update(source.read_bytes())
    return cache_root() / kind / h.hexdigest()[:24]


def restore(where: Path, bindir: Path, key: str, names: tuple[str, ...]) -> bool:
    """Copy a complete cached build into bindir (stamp last); False if there is none."""
    stamp = where / STAMP
    if not (stamp.is_file() and stamp.read_text() == key):
        return False
    if not all(os.access(where / n, os.X_OK) for n in names):
        return False
    partial = bindir.with_name(f"{bindir.name}.restoring")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(where, partial, ignore=shutil.ignore_patterns(STAMP))
    (partial / STAMP).write_text(key)
    shutil.rmtree(bindir, ignore_errors=True)
    partial.rename(bindir)
    os.utime(where)  # recently used: pruning keeps it
    return True


def store(where: Path, bindir: Path) -> None:
    """Keep a finished build (bindir, stamped) as the entry `where`; prune older entries."""
    if where.is_dir():
        return
    where.parent.mkdir(parents=True, exist_ok=True)
    partial = where.with_name(f"{where.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(bindir, partial, ignore=shutil.ignore_patterns(STAMP))
    shutil.copy2(bindir / STAMP, partial / STAMP)
    try:
        partial.rename(where)
    except OSError:  # another build stored the same entry first
        shutil.rmtree(partial, ignore_errors=True)
    entries = sorted(
        (p for p in where.parent.iterdir() if p.is_dir() and "." not in p.name),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
