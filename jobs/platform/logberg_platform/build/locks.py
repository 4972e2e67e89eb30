"""One builder per output folder at a time, across processes: `make` lanes run at once (the
cluster lane's image builds and the local lane's `make setup` both need versitygw), and a
second caller must wait and then reuse what the first built, not write the same files."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold `folder`/.lock (flock; released when the holder exits, however it exits)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
