"""Typed, validated settings of `logberg ingest --from kafka://...`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from logberg.errors import ConfigError
from logberg.lakehouse.kafka import TopicUri
from logberg.pipeline.ingest.config import check_uri

# Messages per micro-batch by default. Raw lines stream from the broker into the table's
# rows (dev.logberg.KafkaLines) and hold no batch in memory, and each batch costs a few
# seconds of commits and ledger rows, so a backlog goes in big batches (5M: one batch of the
# bench's topic, 1.7x the throughput of five). Envelopes are held while they are decoded:
# 1M of them is about a gigabyte.
DEFAULT_MAX_RAW_MESSAGES_PER_TRIGGER = 5_000_000
DEFAULT_MAX_ENVELOPES_PER_TRIGGER = 1_000_000
DEFAULT_TRIGGER_SECONDS = 1.0
# A message longer than this is not a line (nginx's own request line limit is 8 KB by
# default): it is rejected, `too_long`, with its bytes.
DEFAULT_MAX_LINE_BYTES = 1 << 20
FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ValueFormat:
    """What a message's value is: the raw line, or a JSON envelope whose `field` holds it
    (Fluent Bit's `log`, Vector's `message`), with the shipper's `host`, `file` and
    `offset` when it sends them."""

    field: str | None = None  # None: the value is the raw line

    @classmethod
    def parse(cls, raw: str) -> ValueFormat:
        if raw == "raw":
            return cls()
        kind, _, field = raw.partition(":")
        if kind != "json" or not FIELD.match(field):
            raise ConfigError(f"--value {raw!r}: expected raw or json:FIELD (e.g. json:log)")
        return cls(field)

    @property
    def label(self) -> str:
        return "raw" if self.field is None else f"json:{self.field}"


@dataclass(frozen=True)
class KafkaIngestConfig:
    source: TopicUri
    value: ValueFormat = ValueFormat()
    checkpoint: str | None = None  # default: <warehouse>/_checkpoints/kafka/<topic>
    once: bool = False  # what the topic holds now, then stop (available-now)
    trigger_seconds: float = DEFAULT_TRIGGER_SECONDS
    max_messages_per_trigger: int | None = None  # None: the value format's default
    analytics_every: int = 1  # refresh analytics after every N batches; 0: never
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    # Raw lines: the fewest tasks a batch is read in, a partition's range split into pieces
    # to make them up (None: the session's cores; 1: a task per partition), and the fewest
    # messages of a piece (None: KafkaLines' own, 20,000).
    min_partitions: int | None = None
    min_split_messages: int | None = None

    def __post_init__(self) -> None:
        if self.trigger_seconds <= 0:
            raise ConfigError(f"--trigger-seconds {self.trigger_seconds}: must be positive")
        if self.max_messages_per_trigger is not None and self.max_messages_per_trigger <= 0:
            raise ConfigError(
                f"--max-messages-per-trigger {self.max_messages_per_trigger}: must be positive"
            )
        if self.min_partitions is not None and self.min_partitions < 1:
            raise ConfigError(f"--min-partitions {self.min_partitions}: must be at least 1")
        if self.min_split_messages is not None and self.min_split_messages < 1:
            raise ConfigError(f"min_split_messages {self.min_split_messages}: must be positive")
        if self.analytics_every < 0:
            raise ConfigError(f"--analytics-every {self.analytics_every}: must not be negative")
        if self.checkpoint is not None:
            check_uri(self.checkpoint, "--checkpoint")

    @property
    def messages_per_trigger(self) -> int:
        """The most messages one micro-batch reads (Spark's maxOffsetsPerTrigger)."""
        if self.max_messages_per_trigger is not None:
            return self.max_messages_per_trigger
        if self.value.field is None:
            return DEFAULT_MAX_RAW_MESSAGES_PER_TRIGGER
        return DEFAULT_MAX_ENVELOPES_PER_TRIGGER
