"""The tests' one way to wait for a condition: poll until it holds. The timeout bounds a
failure only; no test asserts how long anything took."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    what: str,
    check: Callable[[], T | None],
    timeout: float = 90,
    every: float = 1.0,
    explain: Callable[[], str] | None = None,
) -> T:
    """check()'s first truthy value, polled every `every` seconds. After `timeout`, an
    AssertionError names `what` (and adds `explain()`, such as a server's log tail)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            detail = f":\n{explain()}" if explain else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(every)
