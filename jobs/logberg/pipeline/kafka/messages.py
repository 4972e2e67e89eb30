"""Pure DataFrame -> DataFrame transforms from Kafka records to the lines ingest parses.

A message is one line: the raw line, or a JSON envelope with the line in a field (what Fluent
Bit, Vector and rsyslog's omkafka send). Its lineage, in the columns a file's line has:

* `source_file`, `line_number`: where the line was at its source. The shipper's `host` and
  `file` (`host:file`) and its `offset`, when the envelope has all three; else the topic's
  partition (`kafka://TOPIC/PARTITION`) and the message's offset. `event_id` derives from
  them as for a file's line (`parse.event_id`): the same on every replay of the topic, and
  the same for a line a shipper sent twice (its source identity), which is stored once.
* A message that cannot be a line is rejected with its bytes (`raw_bytes`) and a reason:
  `tombstone` (no value), `empty`, `too_long`, `not_utf8`, `no_field` (the envelope is not
  JSON, or lacks the field). Every other message is parsed as a file's line is.
"""

from __future__ import annotations

from enum import Enum

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from logberg.lakehouse import sql
from logberg.pipeline.kafka.config import ValueFormat

# The shipper's fields beside the line, in an envelope (Fluent Bit's tail input and Vector's
# file source send them under these names).
HOST, FILE, OFFSET = "host", "file", "offset"


class BadMessage(str, Enum):
    """Why a message is not a line (access_logs_rejects.reason)."""

    TOMBSTONE = "tombstone"
    EMPTY = "empty"
    TOO_LONG = "too_long"
    NOT_UTF8 = "not_utf8"
    NO_FIELD = "no_field"


def coordinates(topic: Column, partition: Column) -> Column:
    """The lineage of a message without a source identity: its topic's partition."""
    return F.concat(F.lit("kafka://"), topic, F.lit("/"), partition.cast("string"))


def _strip_newline(text: Column) -> Column:
    """A shipper may keep the line's end: one trailing \\n (or \\r\\n) is not the line's.
    (Not a regex: `regexp_replace` took 4 s of 13 per million messages.)"""
    n = F.length(text)
    return (
        F.when(text.endswith("\r\n"), F.substring(text, F.lit(1), n - 2))
        .when(text.endswith("\n"), F.substring(text, F.lit(1), n - 1))
        .otherwise(text)
    )


def lines(messages: DataFrame, value: ValueFormat, max_line_bytes: int) -> DataFrame:
    """Kafka records (topic, partition, offset, value) -> one row per message:
    partition, offset, source_file, line_number, value (the line; a bad message's text made
    valid UTF-8, NULL for a tombstone), raw_bytes (a bad message's bytes) and bad (why it is
    not a line; NULL for a line)."""
    v = F.col("value")
    text = v.cast("string")
    bad = (
        F.when(v.isNull(), BadMessage.TOMBSTONE.value)
        .when(F.length(v) == 0, BadMessage.EMPTY.value)
        .when(F.length(v) > max_line_bytes, BadMessage.TOO_LONG.value)
        .when(~F.is_valid_utf8(text), BadMessage.NOT_UTF8.value)
    )
    where_file = coordinates(F.col("topic"), F.col("partition"))
    where_line = F.col("offset")
    if value.field is None:
        line = _strip_newline(text)
    else:
        fields = {value.field: "STRING", HOST: "STRING", FILE: "STRING", OFFSET: "BIGINT"}
        ddl = ", ".join(f"{sql.identifier(k)} {t}" for k, t in fields.items())
        envelope = F.from_json(F.when(bad.isNull(), text), ddl, {"mode": "PERMISSIVE"})
        line = _strip_newline(envelope[value.field])
        bad = F.coalesce(bad, F.when(line.isNull(), BadMessage.NO_FIELD.value))
        identity = (
            envelope[HOST].isNotNull() & envelope[FILE].isNotNull() & envelope[OFFSET].isNotNull()
        )
        where_file = F.when(identity, F.concat_ws(":", envelope[HOST], envelope[FILE])).otherwise(
            where_file
        )
        where_line = F.when(identity, envelope[OFFSET]).otherwise(where_line)
    staged = messages.select(
        "partition",
        "offset",
        where_file.alias("source_file"),
        where_line.alias("line_number"),
        F.col("value").alias("_bytes"),
        line.alias("_line"),
        bad.alias("bad"),
    )
    b = F.col("bad")
    return staged.select(
        "partition",
        "offset",
        "source_file",
        "line_number",
        F.when(b.isNull(), F.col("_line"))
        .otherwise(F.make_valid_utf8(F.col("_bytes").cast("string")))
        .alias("value"),
        F.when(b.isNotNull(), F.col("_bytes")).alias("raw_bytes"),
        b,
    )


def bad_messages(staged: DataFrame, run_id: str, rejected_at: Column) -> DataFrame:
    """The messages that are not lines, as rows of the rejects table."""
    return staged.where(F.col("bad").isNotNull()).select(
        "source_file",
        "line_number",
        F.col("value").alias("raw_line"),
        F.col("bad").alias("reason"),
        F.lit(run_id).alias("run_id"),
        rejected_at.alias("rejected_at"),
        F.lit("combined").alias("log_format"),
        "raw_bytes",
    )
