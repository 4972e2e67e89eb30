"""A validated generator configuration and the run id derived from it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from generator import __version__

FORMATS = ("combined", "main", "ingress-nginx", "json")
APPS = ("nginx",)
MAX_DAYS_PER_FILE = 366
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_TZ = re.compile(r"^([+-])(\d{2})(\d{2})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class UsageError(ValueError):
    """A bad argument; the CLI prints `generate: error: <message>` and exits 2."""


_KAFKA = re.compile(r"^kafka://([^/]*)/([a-zA-Z0-9._-]{1,249})$")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")
KAFKA_BOOTSTRAP_ENV = "LOGBERG_KAFKA_BOOTSTRAP"
MESSAGES = ("raw", "json")
HOME_ENV = "LOGBERG_HOME"
PROFILE_ENV = "LOGBERG_PROFILE"
# Under the home, a topic's manifests: the chart's scheme on S3 (s3://BUCKET/kafka-manifests/
# TOPIC), so `<home>/kafka-manifests/<topic>/raw/nginx/_manifests/<run_id>.json`.
KAFKA_MANIFESTS = "kafka-manifests"


def logberg_home() -> Path:
    """$LOGBERG_HOME, else logberg's default home (the platform's LocalSettings, which the
    generator does not import): `.logberg` in the source checkout the generator runs from,
    else in the working directory."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home).resolve()
    root = Path(__file__).resolve().parents[1]  # generator/config.py in a checkout
    if not ((root / "pyproject.toml").is_file() and (root / "jobs").is_dir()):
        root = Path.cwd()
    return (root / ".logberg").resolve()


def default_manifest_to(target: KafkaTarget) -> Output:
    """Where a topic's manifest goes without --manifest-to: under the home. A cluster's pod
    (LOGBERG_PROFILE=cluster) keeps no home: there --manifest-to is needed."""
    if os.environ.get(PROFILE_ENV) == "cluster":
        raise UsageError(
            f"--output {target.uri} in a cluster ({PROFILE_ENV}=cluster) needs --manifest-to "
            "s3://bucket/prefix: a pod's home does not outlive it"
        )
    return Output(path=logberg_home() / KAFKA_MANIFESTS / target.topic)


@dataclass(frozen=True)
class KafkaTarget:
    """A topic: its brokers (`host:port,...`) and its name; `client`: the Kafka clients' own
    options (librdkafka's names: TLS, SASL), which `logberg generate` gives from
    LOGBERG_KAFKA_OPTIONS_FILE and LOGBERG_KAFKA_OPTIONS; never shown."""

    bootstrap: str
    topic: str
    client: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def uri(self) -> str:
        return f"kafka://{self.bootstrap}/{self.topic}"


@dataclass(frozen=True)
class Output:
    """A local directory (`path`), an S3 bucket and key prefix, or a Kafka topic."""

    path: Path | None = None
    bucket: str = ""
    prefix: str = ""
    kafka: KafkaTarget | None = None

    @property
    def is_s3(self) -> bool:
        return self.path is None and self.kafka is None

    @property
    def uri(self) -> str:
        if self.path is not None:
            return self.path.as_uri()
        if self.kafka is not None:
            return self.kafka.uri
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


def parse_kafka(output: str) -> KafkaTarget:
    """`kafka://HOST:PORT[,...]/TOPIC`; no HOST:PORT: LOGBERG_KAFKA_BOOTSTRAP's brokers."""
    m = _KAFKA.match(output)
    if not m:
        raise UsageError(f"--output {output!r}: expected kafka://HOST:PORT/TOPIC")
    hosts = m[1] or os.environ.get(KAFKA_BOOTSTRAP_ENV, "").strip()
    if not hosts:
        raise UsageError(
            f"--output {output!r} names no broker and {KAFKA_BOOTSTRAP_ENV} is not set"
        )
    if not all(_HOST_PORT.match(h) for h in hosts.split(",")):
        raise UsageError(f"--output {output!r}: brokers are HOST:PORT[,HOST:PORT...]")
    return KafkaTarget(hosts, m[2])


def parse_output(output: str | None, bucket: str | None) -> Output:
    if output and bucket:
        raise UsageError("give either --output or --bucket, not both")
    if bucket is not None:
        return Output(bucket=check_bucket_name(bucket))
    if not output:
        raise UsageError("an output is required: --output file:///abs/dir | s3://bucket/prefix")
    if output.startswith("kafka:"):
        return Output(kafka=parse_kafka(output))
    u = urlparse(output)
    if u.scheme == "s3":
        return Output(bucket=check_bucket_name(u.netloc), prefix=u.path.strip("/"))
    if u.scheme == "file":
        if u.netloc not in ("", "localhost") or not u.path.startswith("/"):
            raise UsageError(f"--output {output!r}: expected file:///absolute/dir")
        return Output(path=Path(unquote(u.path)))
    if u.scheme:
        raise UsageError(f"--output {output!r}: only file://, s3:// and kafka:// are supported")
    return Output(path=Path(output).resolve())


def check_bucket_name(name: str) -> str:
    if not _BUCKET.match(name):
        raise UsageError(f"{name!r} is not a valid S3 bucket name")
    return name


def check_writable(path: Path) -> None:
    """The directory exists and is writable, or could be created."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write to {path} ({probe} is not a writable directory)")


def parse_date(flag: str, text: str) -> date:
    try:
        if not _DATE.match(text):
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected YYYY-MM-DD") from None


def parse_tz(text: str) -> int:
    """`+HHMM` / `-HHMM` as an offset in seconds."""
    m = _TZ.match(text)
    if not m or int(m[2]) > 14 or int(m[3]) > 59:
        raise UsageError(f"--tz {text!r}: expected an offset like +0000, +0530 or -0800")
    seconds = int(m[2]) * 3600 + int(m[3]) * 60
    return -seconds if m[1] == "-" else seconds


@dataclass(frozen=True)
class Config:
    num_files: int
    lines_per_file: int
    start: date
    end: date
    app: str
    output: Output
    endpoint_url: str | None
    seed: int
    malformed_rate: float
    gzip: bool
    fmt: str
    tz: str
    clients: int
    quiet: bool = True
    # A Kafka output: each line a message, `raw` or a `json` envelope (Fluent Bit's: the line
    # in `log`, with `host`, `file` and `offset`); the topic's partitions when it is made;
    # where the manifest goes (a directory or S3 prefix: a topic holds no manifest; the
    # command line's default is `default_manifest_to`).
    message: str = "raw"
    partitions: int = 4
    manifest_to: Output | None = None

    def __post_init__(self) -> None:
        if self.num_files < 1:
            raise UsageError(f"--num-files must be at least 1 (got {self.num_files})")
        if self.lines_per_file < 1:
            raise UsageError(f"--lines-per-file must be at least 1 (got {self.lines_per_file})")
        if self.clients < 1:
            raise UsageError(f"--clients must be at least 1 (got {self.clients})")
        if self.end < self.start:
            raise UsageError(f"--end-date {self.end} is before --start-date {self.start}")
        days = (self.end - self.start).days + 1
        if days > MAX_DAYS_PER_FILE * self.num_files:
            raise UsageError(f"{days} days in {self.num_files} file(s): at most 366 days a file")
        if self.num_files > days * 86_400:
            raise UsageError(f"--num-files {self.num_files} exceeds the seconds in the range")
        if not 0.0 <= self.malformed_rate <= 1.0:
            raise UsageError(f"--malformed-rate must be within [0, 1] (got {self.malformed_rate})")
        if self.app not in APPS:
            raise UsageError(f"--app {self.app!r}: only nginx is supported")
        if self.fmt not in FORMATS:
            raise UsageError(f"--format {self.fmt!r}: expected one of {', '.join(FORMATS)}")
        parse_tz(self.tz)
        to_s3 = self.output.is_s3 or (self.manifest_to is not None and self.manifest_to.is_s3)
        if self.endpoint_url and not to_s3:
            raise UsageError("--endpoint-url needs an s3:// output (or --manifest-to) or --bucket")
        if self.output.kafka is None:
            if self.manifest_to is not None or self.message != "raw":
                raise UsageError("--manifest-to and --message are for a kafka:// output")
            return
        if self.manifest_to is None or self.manifest_to.kafka is not None:
            raise UsageError(
                "--manifest-to: the manifest of a kafka:// output (the ground truth) goes to "
                "file:///abs/dir or s3://bucket/prefix (default: under $LOGBERG_HOME)"
            )
        if self.message not in MESSAGES:
            raise UsageError(f"--message {self.message!r}: expected raw or json")
        if not 1 <= self.partitions <= 1024:
            raise UsageError(f"--partitions must be within 1..1024 (got {self.partitions})")

    @property
    def tz_offset(self) -> int:
        return parse_tz(self.tz)

    def data_args(self) -> dict[str, object]:
        """Everything that determines the generated bytes."""
        return {
            "app": self.app,
            "num_files": self.num_files,
            "lines_per_file": self.lines_per_file,
            "start_date": self.start.isoformat(),
            "end_date": self.end.isoformat(),
            "seed": self.seed,
            "malformed_rate": self.malformed_rate,
            "gzip": self.gzip,
            "format": self.fmt,
            "tz": self.tz,
            "clients": self.clients,
        }

    def args(self) -> dict[str, object]:
        out: dict[str, object] = {
            **self.data_args(),
            "output": self.output.uri,
            "endpoint_url": self.endpoint_url,
        }
        if self.output.kafka is not None:
            out["message"] = self.message
        return out

    @property
    def run_id(self) -> str:
        """Derived from the generator version, seed and data arguments: the same inputs give
        the same file names, different ones never collide."""
        blob = json.dumps([__version__, self.data_args()], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
