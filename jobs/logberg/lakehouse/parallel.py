"""Steps on one session run at once, each in its own thread.

Spark runs concurrent jobs of one session (and a Spark Connect session concurrent
queries), so small jobs fill the cores one alone leaves idle, and commits and DDL overlap
their metastore round trips. A worker thread's session state need not have the session's
current catalog: steps name their tables with the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def raise_first(futures: Sequence[Future[Any]]) -> None:
    """Raise the first error of `futures` (all done), if any."""
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        raise errors[0]


def concurrently(steps: Sequence[Callable[[], object]], name: str = "logberg") -> None:
    """Run every step at once, each in its own thread (named `name`-N). Every step runs to
    its end before the first error is raised, so none is left running."""
    if len(steps) == 1:
        steps[0]()
        return
    with ThreadPoolExecutor(max_workers=max(1, len(steps)), thread_name_prefix=name) as pool:
        futures = [pool.submit(step) for step in steps]
    raise_first(futures)
