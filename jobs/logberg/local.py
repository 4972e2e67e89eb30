"""`logberg local up | down | status`: the embedded platform under $LOGBERG_HOME."""

from __future__ import annotations

import os
from dataclasses import dataclass

from logberg import metastore, s3server
from logberg.procs import port_open
from logberg.settings import LocalSettings


@dataclass(frozen=True)
class Status:
    name: str
    running: bool
    pid: int | None
    where: str
    log: str


def _layout(s: LocalSettings) -> None:
    for d in (s.home, s.warehouse, s.landing, s.logs, s.run, s.metastore_dir):
        d.mkdir(parents=True, exist_ok=True)


def up(s: LocalSettings, with_s3: bool = False) -> list[str]:
    """Start what is not running yet; returns lines to print."""
    _layout(s)
    lines = []
    s3_env = None
    # Another S3-compatible endpoint (LOGBERG_S3_ENDPOINT): the metastore reaches the
    # warehouse there, with the AWS_* credentials of this environment.
    s3_endpoint = os.environ.get("LOGBERG_S3_ENDPOINT") or None
    if with_s3 or s3server.is_running(s):
        s3_endpoint = s3server.start(s)
        s3_env = s3server.client_env(s)
        lines.append(f"s3        {s3_endpoint}  bucket s3://{s3server.DEFAULT_BUCKET}")
    warehouse = os.environ.get("LOGBERG_WAREHOUSE") or s.warehouse.as_uri()
    uri = metastore.start(s, warehouse, s3_env=s3_env, s3_endpoint=s3_endpoint)
    lines.insert(0, f"metastore {uri}  ({s.metastore_db.label})")
    lines.append(f"warehouse {warehouse}")
    lines.append(f"home      {s.home}")
    return lines


def down(s: LocalSettings) -> list[str]:
    """Stop only what `up` started under this home."""
    lines = []
    for svc in (metastore.service(s), s3server.service(s)):
        lines.append(f"{svc.name}: {'stopped' if svc.stop() else 'was not running'}")
    return lines


def status(s: LocalSettings) -> list[Status]:
    out = []
    ms = metastore.service(s)
    pid = ms.pid()
    out.append(
        Status(
            ms.name,
            pid is not None and port_open(s.metastore_port),
            pid,
            f"{s.metastore_uri} ({s.metastore_db.label})",
            str(ms.log_file),
        )
    )
    s3 = s3server.service(s)
    pid = s3.pid()
    out.append(Status(s3.name, pid is not None, pid, s.s3_endpoint, str(s3.log_file)))
    return out
