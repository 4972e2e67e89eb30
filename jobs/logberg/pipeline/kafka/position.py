"""Where a Kafka stream stands, from its checkpoint and the broker alone (no Spark): the
offsets of its last committed micro-batch against the topic's end.

Spark writes `commits/N` in the checkpoint once batch N is done, and the ingest stores a
batch's rows, its ingest run and (after each batch, by default) the analytics inside it,
so `offsets/N` of the last commit is where the lakehouse ends. `logberg k8s wait stream`
runs this inside the stream's driver pod (a Kafka client, with the S3 credentials):

    python3 -m logberg.pipeline.kafka.position kafka:///TOPIC [CHECKPOINT]

and reads the one JSON object it prints: {"batch": N or null, "at": {partition: offset},
"ends": {partition: offset}, "behind": messages}. CHECKPOINT (s3a:// or file://) defaults to the
job's own, <LOGBERG_WAREHOUSE>/_checkpoints/kafka/<topic> (`job.default_checkpoint`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from logberg.errors import ConfigError


def last_batch(names: Iterable[str]) -> int | None:
    """The greatest batch id among a checkpoint folder's file names (`commits/`)."""
    ids = [int(n) for n in names if n.isdigit()]
    return max(ids) if ids else None


def behind(at: Mapping[int, int], ends: Mapping[int, int]) -> int:
    """Messages the topic holds past `at` (a partition missing from `at`: all of its own)."""
    return sum(max(0, end - at.get(p, 0)) for p, end in ends.items())


class _Checkpoint:
    """A checkpoint's files: on S3 (s3a://, through boto3 and LOGBERG_S3_ENDPOINT) or on
    this machine's disk (file://, the local platform's)."""

    def __init__(self, uri: str) -> None:
        u = urlparse(uri)
        self.scheme = u.scheme
        if u.scheme in ("s3", "s3a") and u.netloc:
            import boto3

            endpoint = os.environ.get("LOGBERG_S3_ENDPOINT") or None
            self.s3 = boto3.client("s3", endpoint_url=endpoint) if endpoint else boto3.client("s3")
            self.bucket, self.prefix = u.netloc, u.path.strip("/")
        elif u.scheme == "file":
            self.root = Path(u.path)
        else:
            raise ConfigError(f"checkpoint {uri!r}: expected s3a://bucket/prefix or file:///dir")

    def names(self, folder: str) -> list[str]:
        if self.scheme == "file":
            where = self.root / folder
            return [p.name for p in where.iterdir()] if where.is_dir() else []
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}/{folder}/"
        )
        return [o["Key"].rsplit("/", 1)[-1] for page in pages for o in page.get("Contents", [])]

    def read(self, path: str) -> str:
        if self.scheme == "file":
            return (self.root / path).read_text()
        body = self.s3.get_object(Bucket=self.bucket, Key=f"{self.prefix}/{path}")["Body"]
        return str(body.read().decode())


def position(topic_uri: str, checkpoint: str | None = None) -> dict[str, Any]:
    from logberg.lakehouse import kafka
    from logberg.pipeline.kafka.offset_log import offsets

    source = kafka.parse_topic_uri(topic_uri, "--from")
    if checkpoint is None:
        warehouse = os.environ.get("LOGBERG_WAREHOUSE", "").rstrip("/")
        if not warehouse:
            raise ConfigError("LOGBERG_WAREHOUSE: not set, and no checkpoint was given")
        checkpoint = f"{warehouse}/_checkpoints/kafka/{source.topic}"
    files = _Checkpoint(checkpoint)
    batch = last_batch(files.names("commits"))
    at = {} if batch is None else offsets(files.read(f"offsets/{batch}"), source.topic)
    ends = kafka.end_offsets(source)
    return {"batch": batch, "at": at, "ends": ends, "behind": behind(at, ends)}


def main(argv: Sequence[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(json.dumps(position(argv[0], argv[1] if len(argv) > 1 else None)))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
