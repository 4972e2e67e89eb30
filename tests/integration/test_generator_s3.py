"""The generator against a real local S3-compatible server (versitygw)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from logberg_platform.supervisor import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BUCKET = "logberg"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A private S3 server with the `logberg` bucket; its client env and a boto3 client."""
    from logberg_platform import s3server
    from logberg_platform.local_settings import LocalSettings

    env = {
        "LOGBERG_HOME": str(tmp_path_factory.mktemp("s3-home")),
        "LOGBERG_S3_PORT": str(free_port()),
        "LOGBERG_CONNECT_PORT": str(free_port()),
        "LOGBERG_TOOLS": os.environ.get("LOGBERG_TOOLS") or str(REPO / ".tools"),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        settings = LocalSettings.from_env()
        endpoint = s3server.start(settings, bucket=BUCKET)
        try:
            yield {
                "endpoint": endpoint,
                "env": s3server.client_env(settings),
                "client": s3server.boto3_client(settings),
            }
        finally:
            s3server.service(settings).stop()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def generate(s3: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **s3["env"]}
    env.pop("AWS_ENDPOINT_URL_S3", None)  # the flag alone must be enough
    return subprocess.run(
        [sys.executable, "-m", "generator", "--quiet", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def keys(client: Any, prefix: str) -> dict[str, int]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def test_generate_to_s3_writes_the_files_then_the_manifest(s3: dict[str, Any]) -> None:
    args = ("--num-files", "3", "--lines-per-file", "3000", "--start-date", "2025-01-06")
    done = generate(
        s3,
        "--output",
        f"s3://{BUCKET}/prefix",
        "--endpoint-url",
        s3["endpoint"],
        *args,
        "--end-date",
        "2025-01-08",
        "--seed",
        "11",
        "--malformed-rate",
        "0.01",
    )
    assert done.returncode == 0, done.stderr
    client = s3["client"]
    found = keys(client, "prefix/")
    (manifest_key,) = [k for k in found if k.startswith("prefix/raw/nginx/_manifests/")]
    manifest = json.loads(client.get_object(Bucket=BUCKET, Key=manifest_key)["Body"].read())
    assert manifest_key.endswith(f"/{manifest['run_id']}.json")
    assert manifest["output"] == f"s3://{BUCKET}/prefix"
    data_keys = {f"prefix/{f['path']}" for f in manifest["files"]}
    assert set(found) == data_keys | {manifest_key}
    for f in manifest["files"]:
        key = f"prefix/{f['path']}"
        assert f["uri"] == f"s3://{BUCKET}/{key}" and key.startswith("prefix/raw/nginx/dt=")
        body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        assert len(body) == f["bytes"] == found[key]
        assert hashlib.sha256(body).hexdigest() == f["sha256"]
        assert gzip.decompress(body).count(b"\n") == f["lines"] == 3000
    assert manifest["totals"]["lines"] == 9000


def test_bucket_flag_writes_at_the_bucket_root(s3: dict[str, Any]) -> None:
    done = generate(
        s3, "--bucket", BUCKET, "--endpoint-url", s3["endpoint"], "--lines-per-file", "50"
    )
    assert done.returncode == 0, done.stderr
    found = keys(s3["client"], "raw/nginx/")
    assert any(k.endswith(".log.gz") for k in found)
    assert any(k.startswith("raw/nginx/_manifests/") for k in found)


def test_a_missing_bucket_exits_2_and_writes_nothing(s3: dict[str, Any]) -> None:
    done = generate(s3, "--output", "s3://no-such-bucket/x", "--endpoint-url", s3["endpoint"])
    assert done.returncode == 2
    assert done.stderr.startswith("generate: error: bucket 'no-such-bucket' does not exist")
    assert done.stderr.count("\n") == 1
    buckets = {b["Name"] for b in s3["client"].list_buckets()["Buckets"]}
    assert "no-such-bucket" not in buckets


def test_an_unreachable_endpoint_exits_2_and_writes_nothing(s3: dict[str, Any]) -> None:
    before = keys(s3["client"], "")
    done = generate(
        s3, "--output", f"s3://{BUCKET}/down", "--endpoint-url", f"http://127.0.0.1:{free_port()}"
    )
    assert done.returncode == 2
    assert done.stderr.startswith("generate: error: cannot reach S3")
    assert done.stderr.count("\n") == 1
    assert keys(s3["client"], "") == before
