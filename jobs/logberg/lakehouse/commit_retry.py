"""The one retry policy for Iceberg commit conflicts, used by ingest (a batch is redone)
and maintenance (a procedure is called again).

A conflict is another writer having committed first in a way this commit may not ignore
(Iceberg's CommitFailedException or ValidationException, as they reach Python through
Py4J). Iceberg has already retried the metadata swap itself (the table's commit.retry.*
properties) before one surfaces here, so what is retried is the whole step: it reads the
table's current state again, so nothing needs waiting for. The conflict itself says the other
writer's commit has landed, so the first retry starts at once. Each round of colliding
writers lands at least one commit, so retries always progress; only a step that conflicts
again waits, a short growing time (a quarter of a second, then doubling, never over a few
seconds) that keeps two writers which keep colliding from retrying in lockstep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

# Iceberg commit conflicts, as they surface through Py4J / Spark's error conversion.
CONFLICT_MARKERS = ("CommitFailedException", "ValidationException", "Cannot commit rewrite")


def is_commit_conflict(error: BaseException) -> bool:
    """Another writer committed first in a way this commit may not ignore: retry it."""
    return any(marker in str(error) for marker in CONFLICT_MARKERS)


@dataclass(frozen=True)
class CommitRetry:
    """Run a step; on a commit conflict run it again, up to `retries` more times."""

    retries: int = 3
    first_wait: float = 0.25  # seconds before the second retry; doubled for each next one
    max_wait: float = 4.0
    wait: Callable[[float], None] = time.sleep  # injectable: tests record the waits

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1-based): none before the first."""
        if retry <= 1:
            return 0.0
        return float(min(self.first_wait * 2 ** (retry - 2), self.max_wait))

    def run(
        self,
        step: Callable[[], T],
        what: str,
        on_retry: Callable[[], None] | None = None,
    ) -> T:
        """step's result. A conflict on the last try, or any other error, is raised.
        `on_retry` is called once per retry (callers count them in their reports)."""
        for retry in range(1, self.retries + 2):
            try:
                return step()
            except Exception as e:
                if retry > self.retries or not is_commit_conflict(e):
                    raise
                delay = self.delay(retry)
                lines = str(e).strip().splitlines() or [repr(e)]
                cause = next((x for x in lines if is_commit_conflict(Exception(x))), lines[0])
                log.warning(
                    "commit conflict in %s; retry %d of %d in %.2fs: %s",
                    what,
                    retry,
                    self.retries,
                    delay,
                    cause.strip()[:300],
                )
                if on_retry is not None:
                    on_retry()
                if delay > 0:
                    self.wait(delay)
        raise AssertionError("unreachable")
