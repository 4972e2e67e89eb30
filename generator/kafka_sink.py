"""A Kafka topic as the generator's output: each line a message, as a log shipper sends it.

The lines are the file output's of the same seed, in the same order. Every line of a file
goes to one partition (the message key is the file's source identity), so a partition
holds each of its files' lines in order. The value is the raw line (`raw`), or Fluent
Bit's JSON envelope (`json`: the line in `log`, with `host`, `file` and `offset`, the
line's number in its file), which identifies the line at its source: a consumer that sees
the same line twice (a shipper's replay) can tell.

The producer is confluent-kafka's (librdkafka): idempotent (a retry never writes a line
twice), acks from all replicas, lz4-compressed batches. The manifest's sha256 of a file is
that of the file the lines would make, uncompressed; the manifest itself goes to
`--manifest-to` once every message is acknowledged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from generator.config import KafkaTarget
from generator.sinks import Destination, Writer, Written

HOST = "logberg-generator"  # the envelope's `host`: the generator stands for one web server
LOG_DIR = "/var/log/nginx"  # the envelope's `file`: a file's name under nginx's log folder
PRODUCER = {
    "enable.idempotence": True,
    "acks": "all",
    "compression.type": "lz4",
    "linger.ms": 20,
    "batch.size": 1 << 20,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1 << 20,
    "message.max.bytes": 16 << 20,
    "log_level": 3,  # librdkafka says errors only (a retry while the broker starts is none)
    # Java's default partitioner (murmur2 of the key): librdkafka's own (CRC32) put every file
    # of a run in one partition, their keys differing in one digit only.
    "partitioner": "murmur2_random",
}


def _admin(t: KafkaTarget) -> Any:
    """An admin client of the brokers with the target's client options."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": t.bootstrap, "log_level": 3, **t.client})
    if "oauth_cb" in t.client:
        admin.poll(0)  # serves the token callback, which the first request waits for
    return admin


def check_brokers(t: KafkaTarget, timeout: float = 5.0) -> str | None:
    """None if the brokers answer a metadata request, else a one-line reason."""
    from confluent_kafka import KafkaException

    try:
        _admin(t).list_topics(timeout=timeout)
    except KafkaException as e:
        return f"the Kafka brokers at {t.bootstrap} do not answer ({e.args[0].str()})"
    return None


def ensure_topic(t: KafkaTarget, partitions: int, timeout: float = 30.0) -> int:
    """The topic's partitions; the topic is made with `partitions` when it does not exist."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = _admin(t)
    found = admin.list_topics(topic=t.topic, timeout=timeout).topics.get(t.topic)
    if found is not None and found.error is None and found.partitions:
        return len(found.partitions)
    made = admin.create_topics([NewTopic(t.topic, num_partitions=partitions)])
    try:
        made[t.topic].result(timeout)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    return partitions


class KafkaWriter:
    """A file's lines as messages (the FileWriter's interface: `write` chunks of whole
    lines, `close` says what was sent)."""

    def __init__(self, producer: Any, topic: str, rel: str, envelope: bool) -> None:
        self._producer = producer
        self._topic = topic
        self._file = f"{LOG_DIR}/{Path(rel).name.removesuffix('.gz')}"
        self._key = f"{HOST}:{self._file}".encode()
        self._envelope = envelope
        self._sha = hashlib.sha256()
        self._size = 0
        self._line = 0

    def _send(self, value: bytes) -> None:
        while True:
            try:
                self._producer.produce(self._topic, value, self._key)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.05)

    def write(self, chunk: bytes) -> None:
        self._sha.update(chunk)
        self._size += len(chunk)
        lines = chunk.split(b"\n")
        assert lines[-1] == b"", "a chunk ends with a whole line"
        for line in lines[:-1]:
            self._line += 1
            if self._envelope:
                body = {
                    "log": line.decode(),
                    "host": HOST,
                    "file": self._file,
                    "offset": self._line,
                }
                self._send(json.dumps(body, ensure_ascii=False).encode())
            else:
                self._send(line)
        self._producer.poll(0)

    def close(self) -> Written:
        return Written(self._size, self._size, self._sha.hexdigest())

    def abort(self) -> None:
        return None


class KafkaDestination(Destination):
    """The lines to a topic; the manifest to `manifests` (a directory or S3 prefix)."""

    def __init__(
        self, target: KafkaTarget, message: str, partitions: int, manifests: Destination
    ) -> None:
        from confluent_kafka import Producer

        self.target = target
        self.root_uri = target.uri
        self.manifests = manifests
        self.envelope = message == "json"
        self.partitions = ensure_topic(target, partitions)
        self._errors: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": target.bootstrap,
                **PRODUCER,
                **target.client,
                "on_delivery": self._delivered,
            }
        )
        if "oauth_cb" in target.client:
            self._producer.poll(0)  # serves the token callback

    @property
    def manifest_root(self) -> str:
        return self.manifests.root_uri

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None and len(self._errors) < 10:
            self._errors.append(str(err))

    def open(self, rel: str, use_gzip: bool) -> tuple[Writer, Path]:
        return KafkaWriter(self._producer, self.target.topic, rel, self.envelope), Path(rel)

    def commit(self, tmp: Path, rel: str) -> str:
        return f"{self.root_uri}#{rel}"

    def _flush(self) -> None:
        left = self._producer.flush(300)
        if left or self._errors:
            raise RuntimeError(
                f"{left} message(s) to {self.root_uri} not acknowledged: {self._errors[:3]}"
            )

    def put_last(self, rel: str, data: bytes) -> str:
        self._flush()  # the manifest only once every line is on the topic
        return self.manifests.put_last(rel, data)

    def close(self, ok: bool) -> None:
        try:
            self._producer.flush(30)
        finally:
            self.manifests.close(ok)
