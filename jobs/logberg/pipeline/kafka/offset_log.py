"""A micro-batch's offset ranges, from Structured Streaming's offset log in its checkpoint.

Before it runs batch N, Spark writes `offsets/N` in the checkpoint: a version line, the
batch's metadata, then each source's end offsets (for the Kafka source, a JSON object
`{"TOPIC": {"PARTITION": NEXT_OFFSET, ...}}`). Before the first batch it writes the
resolved starting offsets to `sources/0/0` in the same form. Batch N reads, per partition,
from the end of batch N-1 (or the start) to its own end: what the raw path of the Kafka
ingest reads itself (`dev.logberg.KafkaLines`), leaving Spark's batch DataFrame unread.
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from logberg.errors import ServiceError


def offsets(text: str, topic: str) -> dict[int, int]:
    """The offsets of `topic` in an offset log file's text."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and isinstance(found.get(topic), dict):
            return {int(p): int(o) for p, o in found[topic].items()}
    raise ServiceError(f"the checkpoint's offset log has no offsets of topic {topic!r}")


def _read(spark: SparkSession, path: str) -> str | None:
    try:
        rows = spark.read.text(path, wholetext=True).collect()
    except Exception as e:  # a missing file: AnalysisException (classic) or its Connect twin
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            return None
        raise
    return rows[0].value if rows else None


def batch_ranges(
    spark: SparkSession, checkpoint: str, batch_id: int, topic: str
) -> dict[int, tuple[int, int]]:
    """partition -> [from, until) that batch `batch_id` of the query at `checkpoint` reads
    (partitions it reads nothing of are left out)."""
    base = checkpoint.rstrip("/")
    end_text = _read(spark, f"{base}/offsets/{batch_id}")
    if end_text is None:
        raise ServiceError(f"{base}/offsets/{batch_id}: the offset log of this batch is missing")
    end = offsets(end_text, topic)
    before = _read(spark, f"{base}/offsets/{batch_id - 1}") if batch_id > 0 else None
    if before is None:
        initial = _read(spark, f"{base}/sources/0/0")
        if initial is None:
            raise ServiceError(
                f"{base}: neither offsets/{batch_id - 1} nor sources/0/0; cannot tell where "
                f"batch {batch_id} starts"
            )
        before = initial
    start = offsets(before, topic)
    # A partition new since the last batch starts at its first offset, as Spark's source does.
    return {p: (start.get(p, 0), until) for p, until in end.items() if until > start.get(p, 0)}
