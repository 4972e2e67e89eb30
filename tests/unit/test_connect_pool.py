"""Session slots of a Spark Connect server (`connect_pool`): a slot is taken by one process
at a time, handed on when its command ends normally, and given a new session when its
command did not end (killed) or the server closed the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from logberg.lakehouse import connect_pool


def record(directory: Path, slot: int) -> dict[str, object]:
    return json.loads((directory / f"{slot}.json").read_text())


def test_a_slot_ended_normally_hands_its_session_to_the_next_command(tmp_path: Path) -> None:
    first = connect_pool.lease(tmp_path)
    assert first is not None
    uuid.UUID(first.session_id)  # the server takes only UUIDs
    assert record(tmp_path, 0) == {"session_id": first.session_id, "clean": False}
    first.end()
    assert record(tmp_path, 0) == {"session_id": first.session_id, "clean": True}
    second = connect_pool.lease(tmp_path)
    assert second is not None and second.session_id == first.session_id
    second.end()


def test_a_held_slot_is_not_shared_and_full_slots_give_none(tmp_path: Path) -> None:
    held = [connect_pool.lease(tmp_path, slots=2) for _ in range(2)]
    assert all(h is not None for h in held)
    assert len({h.session_id for h in held if h}) == 2
    assert connect_pool.lease(tmp_path, slots=2) is None  # a session of its own, then
    for h in held:
        assert h is not None
        h.end()
    again = connect_pool.lease(tmp_path, slots=2)
    assert again is not None and again.session_id == held[0].session_id  # type: ignore[union-attr]


def test_a_slot_whose_process_was_killed_gets_a_new_session(tmp_path: Path) -> None:
    """The lock goes with the process; the slot stays unclean, so its session (which may
    hold what the killed command changed) is not taken up again."""
    child = (
        "import os, sys; from pathlib import Path; from logberg.lakehouse import connect_pool;"
        "h = connect_pool.lease(Path(sys.argv[1])); print(h.session_id, flush=True);"
        "os.kill(os.getpid(), 9)"
    )
    r = subprocess.run([sys.executable, "-c", child, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == -9, r.stderr
    killed = r.stdout.strip()
    assert record(tmp_path, 0) == {"session_id": killed, "clean": False}
    after = connect_pool.lease(tmp_path)
    assert after is not None
    assert after.session_id != killed
    after.end()


def test_renew_replaces_a_closed_session(tmp_path: Path) -> None:
    held = connect_pool.lease(tmp_path)
    assert held is not None
    old = held.session_id
    assert held.renew() != old
    held.end()
    assert record(tmp_path, 0) == {"session_id": held.session_id, "clean": True}


def test_slots_are_private_to_the_user(tmp_path: Path) -> None:
    directory = tmp_path / "slots"
    held = connect_pool.lease(directory)
    assert held is not None
    assert os.stat(directory).st_mode & 0o077 == 0
    assert os.stat(directory / "0.lock").st_mode & 0o077 == 0
    held.end()
