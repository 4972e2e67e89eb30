"""A validated generator configuration and the run id derived from it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
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


@dataclass(frozen=True)
class Output:
    """Either a local directory (`path`) or an S3 bucket and key prefix."""

    path: Path | None = None
    bucket: str = ""
    prefix: str = ""

    @property
    def is_s3(self) -> bool:
        return self.path is None

    @property
    def uri(self) -> str:
        if self.path is not None:
            return self.path.as_uri()
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")


def parse_output(output: str | None, bucket: str | None) -> Output:
    if output and bucket:
        raise UsageError("give either --output or --bucket, not both")
    if bucket is not None:
        return Output(bucket=check_bucket_name(bucket))
    if not output:
        raise UsageError("an output is required: --output file:///abs/dir | s3://bucket/prefix")
    u = urlparse(output)
    if u.scheme == "s3":
        return Output(bucket=check_bucket_name(u.netloc), prefix=u.path.strip("/"))
    if u.scheme == "file":
        if u.netloc not in ("", "localhost") or not u.path.startswith("/"):
            raise UsageError(f"--output {output!r}: expected file:///absolute/dir")
        return Output(path=Path(unquote(u.path)))
    if u.scheme:
        raise UsageError(f"--output {output!r}: only file:// and s3:// are supported")
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
        if self.endpoint_url and not self.output.is_s3:
            raise UsageError("--endpoint-url needs an s3:// output or --bucket")

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
        return {
            **self.data_args(),
            "output": self.output.uri,
            "endpoint_url": self.endpoint_url,
        }

    @property
    def run_id(self) -> str:
        """Derived from the generator version, seed and data arguments: the same inputs give
        the same file names, different ones never collide."""
        blob = json.dumps([__version__, self.data_args()], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
