"""Server sessions that job commands reuse, one command at a time.

Spark keys its compiled query code by the class loader it was compiled under, and a Spark
Connect server gives every session a class loader of its own. A command in a new session
therefore compiles every query of its plan again (about 170 classes for analytics) and
the JIT starts over on them: seconds of CPU on a 2-core laptop, for code the server
compiled for the previous command. A command that takes up a session an earlier command
left compiles nothing.

A slot is a session id in a file and a lock beside it:
- a command takes the first slot whose lock is free (`flock`: the lock goes when the
  process does, however it ends), and runs in that slot's session;
- it marks the slot clean when it ends normally (every setting it changed is restored by
  then). A slot left unclean (its command was killed mid-run) gets a new session id, so
  nothing a killed command left in its session reaches the next;
- when every slot is taken, the command has a session of its own, as before.

Only the job commands reuse sessions. `logberg sql` and `logberg query` run what a user
types (SET, USE, temporary views), so each has a session of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

SLOTS = 4


@dataclass
class Lease:
    """A slot held by this process: its session id, until `end`."""

    record: Path
    fd: int
    session_id: str

    def _write(self, clean: bool) -> None:
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"session_id": self.session_id, "clean": clean}))
        tmp.replace(self.record)

    def renew(self) -> str:
        """A new session id for this slot (the server closed the old one)."""
        self.session_id = str(uuid.uuid4())
        self._write(clean=False)
        return self.session_id

    def end(self) -> None:
        """The command ended normally: the next command may reuse the session."""
        with contextlib.suppress(OSError):
            self._write(clean=True)
        with contextlib.suppress(OSError):
            os.close(self.fd)  # releases the lock


def lease(directory: Path, slots: int = SLOTS) -> Lease | None:
    """The first free slot in `directory`, held; None when every slot is taken."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for n in range(slots):
        fd = os.open(directory / f"{n}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        record = directory / f"{n}.json"
        try:
            state = json.loads(record.read_text())
        except (OSError, ValueError):
            state = {}
        reusable = state.get("session_id") if state.get("clean") is True else None
        held = Lease(record, fd, str(reusable or uuid.uuid4()))
        held._write(clean=False)
        return held
    return None
