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
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from logberg.errors import ConfigError
from logberg.lakehouse.session import LakehouseConfig, check_bucket, is_s3

if TYPE_CHECKING:
    from logberg.lakehouse.kafka import TopicUri

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventLogDir:
    """The S3 prefix Spark writes event logs to and the History Server reads.

    S3A opens `spark.eventLog.dir` and `spark.history.fs.logDirectory` as directories: a
    prefix with no object under it is "not found", the driver then fails at start and the
    History Server exits. The marker is the zero-byte object `<prefix>/`, S3A's own
    directory marker. `create`: write it when it is missing (the drivers' init containers,
    which may write the warehouse bucket); else wait for it (the History Server, read-only).
    """

    uri: str
    create: bool = False

    def __post_init__(self) -> None:
        parsed = urlparse(self.uri)
        if not is_s3(self.uri) or not parsed.netloc or not parsed.path.strip("/"):
            raise ConfigError(f"--event-log-dir={self.uri}: expected s3a://bucket/prefix")

    @property
    def bucket(self) -> str:
        return urlparse(self.uri).netloc

    @property
    def marker(self) -> str:
        return urlparse(self.uri).path.strip("/") + "/"

    def check(self, endpoint: str | None) -> None:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        client = boto3.client("s3", endpoint_url=endpoint) if endpoint else boto3.client("s3")
        try:
            listed = client.list_objects_v2(Bucket=self.bucket, Prefix=self.marker, MaxKeys=1)
            if listed.get("KeyCount", 0) > 0:
                return
            if not self.create:
                raise ConfigError(
                    f"--event-log-dir={self.uri}: no such prefix yet (a Spark job's init "
                    "container writes its marker on its first run)"
                )
            client.put_object(Bucket=self.bucket, Key=self.marker, Body=b"")
            log.info("wrote the event-log directory marker s3://%s/%s", self.bucket, self.marker)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            raise ConfigError(f"--event-log-dir={self.uri}: cannot access it ({code})") from None
        except BotoCoreError as e:
            raise ConfigError(
                f"--event-log-dir={self.uri}: S3 endpoint unreachable ({e})"
            ) from None


def check(
    cfg: LakehouseConfig,
    inputs: Sequence[str] = (),
    event_log: EventLogDir | None = None,
    lakehouse: bool = True,
    metastore: bool = True,
    kafka: TopicUri | None = None,
) -> None:
    """One pass: the metastore answers, the warehouse bucket and every input bucket exist,
    the event-log prefix exists (or is created) and the Kafka brokers (`kafka`) answer.
    `lakehouse=False`: the prefix only; `metastore=False`: the input buckets, the prefix and
    the brokers, not the metastore and warehouse."""
    if lakehouse:
        if metastore:
            cfg.validate()
        for uri in inputs:
            if is_s3(uri):
                check_bucket(uri, "--input", cfg.s3_endpoint)
    if event_log is not None:
        event_log.check(cfg.s3_endpoint)
    if kafka is not None:
        from logberg.lakehouse.kafka import brokers_answer

        brokers_answer(kafka)


def wait_ready(
    cfg: LakehouseConfig,
    inputs: Sequence[str] = (),
    timeout: float = 600.0,
    interval: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    event_log: EventLogDir | None = None,
    lakehouse: bool = True,
    metastore: bool = True,
    kafka: TopicUri | None = None,
) -> float:
    """Repeat `check` until it passes; returns the seconds waited. Raises the last
    ConfigError, prefixed with how long it waited, once `timeout` has passed."""
    started = clock()
    last = ""
    while True:
        try:
            check(cfg, inputs, event_log, lakehouse, metastore, kafka)
            return clock() - started
        except ConfigError as e:
            waited = clock() - started
            if waited >= timeout:
                raise ConfigError(f"not ready after {waited:.0f}s: {e}") from None
            if str(e) != last:  # say each new reason once, not every poll
                log.info("waiting: %s", e)
                last = str(e)
        time.sleep(interval)
