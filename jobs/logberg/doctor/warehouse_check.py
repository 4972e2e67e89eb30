"""The warehouse's check: a write, a read and a delete, on a local folder or on S3."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from logberg.doctor.results import PROBE_DIR, CheckResult, Context, failed, ok, skipped
from logberg.lakehouse.session import is_s3

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


# ---- 5. the warehouse ---------------------------------------------------------------------


def _probe_body(token: str) -> bytes:
    return f"logberg doctor probe {token}\n".encode()


def check_warehouse(ctx: Context) -> CheckResult:
    name = "warehouse"
    uri = ctx.config.warehouse
    scheme = urlparse(uri).scheme
    if is_s3(uri):
        return _check_s3_warehouse(ctx, name, uri)
    if scheme != "file":
        if scheme == "hdfs":
            return skipped(name, f"{uri}: only file:// and s3a:// warehouses are checked")
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri!r} is not a file://, s3a:// or s3:// URI",
            "set LOGBERG_WAREHOUSE to file:///path or s3a://bucket/prefix",
        )
    root = Path(urlparse(uri).path)
    if not root.is_dir():
        return failed(
            name,
            f"{uri}: the directory {root} does not exist",
            "create it, or correct LOGBERG_WAREHOUSE (`logberg local up` creates this "
            "home's default warehouse)",
        )
    token = uuid.uuid4().hex
    probe = root / f".{PROBE_DIR}-{token}"
    body = _probe_body(token)
    try:
        probe.write_bytes(body)
        back = probe.read_bytes()
        probe.unlink()
    except OSError as e:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
        return failed(
            name,
            f"{uri}: cannot write, read and delete a file there ({e})",
            f"make {root} writable for this user, or correct LOGBERG_WAREHOUSE",
        )
    if back != body:
        return failed(
            name, f"{uri}: a file read back differs from what was written", "check the disk"
        )
    return ok(name, f"{uri}: wrote, read back and deleted a probe file")


def s3_client(ctx: Context) -> S3Client:
    """boto3 for the warehouse's S3: with the keys the environment names for the endpoint
    (this home's S3 server's), else the standard credential chain."""
    import boto3
    from botocore.config import Config

    cfg = ctx.config
    conf = Config(
        connect_timeout=min(ctx.timeout, 5.0),
        read_timeout=ctx.timeout,
        retries={"max_attempts": 1},
        s3={"addressing_style": "path" if cfg.s3_path_style else "virtual"},
    )
    kwargs: dict[str, Any] = {"config": conf}
    if cfg.s3_endpoint:
        kwargs["endpoint_url"] = cfg.s3_endpoint
    if cfg.s3_region:
        kwargs["region_name"] = cfg.s3_region
    keys = ctx.hints.s3_keys(cfg.s3_endpoint)
    if keys is not None:
        kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = keys
    return boto3.client("s3", **kwargs)


def _s3_failure(name: str, uri: str, endpoint: str | None, error: Exception) -> CheckResult:
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )

    where = endpoint or "AWS S3"
    bucket = urlparse(uri).netloc
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchBucket", "404", "NotFound"):
            return failed(
                name,
                f"LOGBERG_WAREHOUSE={uri}: bucket {bucket!r} does not exist at {where}",
                "create the bucket, or correct LOGBERG_WAREHOUSE",
            )
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return failed(
                name,
                f"LOGBERG_WAREHOUSE={uri}: {where} refused ({code})",
                "give these AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE) read, write and delete on the warehouse prefix",
            )
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri}: {where} answered {code}: {error}",
            "check LOGBERG_WAREHOUSE, LOGBERG_S3_ENDPOINT and the AWS credentials",
        )
    if isinstance(error, EndpointConnectionError):
        return failed(
            name,
            f"the S3 endpoint {where} does not answer ({error})",
            "start it (`logberg local up --s3` for this home's), or correct LOGBERG_S3_ENDPOINT",
        )
    if isinstance(error, NoCredentialsError):
        return failed(
            name,
            f"LOGBERG_WAREHOUSE={uri}: no AWS credentials found",
            "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
        )
    return failed(
        name,
        f"LOGBERG_WAREHOUSE={uri}: {type(error).__name__}: {error}",
        "check LOGBERG_WAREHOUSE, LOGBERG_S3_ENDPOINT and the AWS credentials",
    )


def _check_s3_warehouse(ctx: Context, name: str, uri: str) -> CheckResult:
    from botocore.exceptions import BotoCoreError, ClientError

    parsed = urlparse(uri)
    bucket = parsed.netloc
    prefix = parsed.path.strip("/")
    token = uuid.uuid4().hex
    key = "/".join(p for p in (prefix, PROBE_DIR, f"{token}.probe") if p)
    body = _probe_body(token)
    client = s3_client(ctx)
    written = False
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body)
        written = True
        back = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        client.delete_object(Bucket=bucket, Key=key)
        written = False
    except (BotoCoreError, ClientError) as e:
        return _s3_failure(name, uri, ctx.config.s3_endpoint, e)
    finally:
        if written:  # a failed read or delete: try once more to leave nothing behind
            with contextlib.suppress(BotoCoreError, ClientError):
                client.delete_object(Bucket=bucket, Key=key)
    if back != body:
        return failed(
            name,
            f"{uri}: an object read back differs from what was written",
            f"check the S3 endpoint {ctx.config.s3_endpoint or 'AWS'}",
        )
    return ok(name, f"{uri}: wrote, read back and deleted s3://{bucket}/{key}")
