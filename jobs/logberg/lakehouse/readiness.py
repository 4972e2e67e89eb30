"""Wait until the lakehouse a job needs is there: the metastore answers and the buckets exist.

A pod's init container runs this (`logberg wait-ready`) before a driver or the generator
starts, so a plain `helm install` that creates the metastore and the jobs together never
races them. Each check is `LakehouseConfig.validate`'s own, repeated until it passes or the
deadline comes; the last failure, which names its setting, is the error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from logberg.errors import ConfigError
from logberg.lakehouse.session import LakehouseConfig, check_bucket, is_s3

log = logging.getLogger(__name__)


def check(cfg: LakehouseConfig, inputs: Sequence[str] = ()) -> None:
    """One pass: the metastore answers, the warehouse bucket and every input bucket exist."""
    cfg.validate()
    for uri in inputs:
        if is_s3(uri):
            check_bucket(uri, "--input", cfg.s3_endpoint)


def wait_ready(
    cfg: LakehouseConfig,
    inputs: Sequence[str] = (),
    timeout: float = 600.0,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Repeat `check` until it passes; returns the seconds waited. Raises the last
    ConfigError, prefixed with how long it waited, once `timeout` has passed."""
    started = clock()
    last = ""
    while True:
        try:
            check(cfg, inputs)
            return clock() - started
        except ConfigError as e:
            waited = clock() - started
            if waited >= timeout:
                raise ConfigError(f"not ready after {waited:.0f}s: {e}") from None
            if str(e) != last:  # say each new reason once, not every poll
                log.info("waiting: %s", e)
                last = str(e)
        time.sleep(interval)
