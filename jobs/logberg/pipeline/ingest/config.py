"""Typed, validated settings of `logberg ingest` (batch) and `ingest --follow` (streaming)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass, field

from logberg.errors import ConfigError
from logberg.pipeline.logformat import Reading

URI = re.compile(r"^(file|s3a?|hdfs):")
DEFAULT_MAX_BYTES_PER_COMMIT = 2 << 30
DEFAULT_MAX_FILES_PER_TRIGGER = 100
DEFAULT_TRIGGER_SECONDS = 10.0


def check_uri(uri: str, setting: str) -> str:
    if not URI.match(uri):
        raise ConfigError(f"{setting} {uri!r}: expected a file://, s3a:// or s3:// URI")
    return uri


@dataclass(frozen=True)
class FollowConfig:
    """`--follow`: a Structured Streaming file source hands micro-batches to the batch engine."""

    trigger_seconds: float = DEFAULT_TRIGGER_SECONDS
    max_files_per_trigger: int | None = DEFAULT_MAX_FILES_PER_TRIGGER
    max_bytes_per_trigger: int | None = None
    checkpoint: str | None = None  # default: <warehouse>/_checkpoints/ingest
    once: bool = False
    analytics_every: int = 1  # refresh analytics after every N batches; 0: never

    def __post_init__(self) -> None:
        if self.max_files_per_trigger is not None and self.max_bytes_per_trigger is not None:
            raise ConfigError("--max-files-per-trigger and --max-bytes-per-trigger: set only one")
        for name in ("trigger_seconds", "max_files_per_trigger", "max_bytes_per_trigger"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"--{name.replace('_', '-')} {value}: must be positive")
        if self.analytics_every < 0:
            raise ConfigError(f"--analytics-every {self.analytics_every}: must not be negative")
        if self.checkpoint is not None:
            check_uri(self.checkpoint, "--checkpoint")


@dataclass(frozen=True)
class IngestConfig:
    inputs: tuple[str, ...]
    since: dt.date | None = None
    full: bool = False
    max_bytes_per_commit: int = DEFAULT_MAX_BYTES_PER_COMMIT
    verify: bool = True
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    follow: FollowConfig | None = None
    reading: Reading = field(default_factory=Reading)  # --log-format, --client-ip

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ConfigError("--input: at least one landing URI is needed")
        for uri in self.inputs:
            check_uri(uri, "--input")
        if self.max_bytes_per_commit <= 0:
            raise ConfigError("--max-bytes-per-commit must be positive")
        if self.follow is not None and self.full:
            raise ConfigError("--full cannot be combined with --follow")
