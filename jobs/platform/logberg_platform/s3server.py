"""A local S3-compatible server (Versity S3 Gateway, posix backend) for the s3a:// path.

Its root credentials are generated per $LOGBERG_HOME, kept in a 0600 file there and
handed to processes through the environment only.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from logberg.errors import ConfigError
from logberg_platform.local_settings import LocalSettings
from logberg_platform.supervisor import Supervised, port_open, wait_for_port

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DEFAULT_BUCKET = "logberg"


def binary(s: LocalSettings) -> Path:
    found = s.tools / "bin" / "versitygw"
    if found.is_file():
        return found
    on_path = shutil.which("versitygw")
    if on_path:
        return Path(on_path)
    raise ConfigError(
        f"no S3 server binary at {found} (LOGBERG_TOOLS); run `make setup` to build versitygw"
    )


def service(s: LocalSettings) -> Supervised:
    return Supervised(
        name="s3-server",
        pid_file=s.run / "s3.pid",
        log_file=s.logs / "s3.log",
        marker=str(s.s3_dir / "data"),
    )


def credentials(s: LocalSettings) -> dict[str, str]:
    """This home's S3 root credentials, created on first use."""
    path = s.s3_dir / "credentials.json"
    if not path.is_file():
        s.s3_dir.mkdir(parents=True, exist_ok=True)
        creds = {
            "access_key": "lb" + secrets.token_hex(9),
            "secret_key": secrets.token_urlsafe(30),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(creds, f)
    data: dict[str, str] = json.loads(path.read_text())
    return data


def client_env(s: LocalSettings) -> dict[str, str]:
    """Environment for an S3 client (boto3, s3a, the metastore) of the local server."""
    c = credentials(s)
    return {
        "AWS_ACCESS_KEY_ID": c["access_key"],
        "AWS_SECRET_ACCESS_KEY": c["secret_key"],
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": s.s3_endpoint,
    }


def is_running(s: LocalSettings) -> bool:
    return service(s).pid() is not None


def start(s: LocalSettings, bucket: str = DEFAULT_BUCKET, timeout: float = 30.0) -> str:
    """Start the server if needed, make sure the bucket exists; returns the endpoint."""
    svc = service(s)
    if svc.pid() is None:
        if port_open(s.s3_port):
            raise ConfigError(f"LOGBERG_S3_PORT={s.s3_port} is already in use by another process")
        data = s.s3_dir / "data"
        meta = s.s3_dir / "meta"
        data.mkdir(parents=True, exist_ok=True)
        meta.mkdir(parents=True, exist_ok=True)
        c = credentials(s)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ROOT_ACCESS_KEY_ID": c["access_key"],
            "ROOT_SECRET_ACCESS_KEY": c["secret_key"],
            "VGW_PORT": f"127.0.0.1:{s.s3_port}",
            "VGW_QUIET": "true",
        }
        proc = svc.start(
            [str(binary(s)), "posix", "--sidecar", str(meta), str(data)], env=env, cwd=s.s3_dir
        )
        wait_for_port(svc, proc, s.s3_port, timeout)
    ensure_bucket(s, bucket)
    return s.s3_endpoint


def ensure_bucket(s: LocalSettings, bucket: str) -> None:
    client = boto3_client(s)
    existing = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
    if bucket not in existing:
        client.create_bucket(Bucket=bucket)


def boto3_client(s: LocalSettings) -> S3Client:
    import boto3

    c = credentials(s)
    return boto3.client(
        "s3",
        endpoint_url=s.s3_endpoint,
        aws_access_key_id=c["access_key"],
        aws_secret_access_key=c["secret_key"],
        region_name="us-east-1",
    )
