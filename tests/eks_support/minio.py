"""A private MinIO server that enforces IAM policies, for tests/integration/test_eks_s3_policies.py.

The binary is the MinIO release pinned in jobs/logberg/versions.toml ([s3] minio), built by
`make eks-minio` (tests/eks_support/build-minio.sh) together with minio_missing_key.go: AWS
answers a GET/HEAD of a missing key with 403 unless the caller may s3:ListBucket, and stock
MinIO does so only for anonymous callers. The build lands in
$LOGBERG_TOOLS/minio/<version>-<first 12 hex of the .go file's sha256>/minio, so a change to
the rule builds a new binary.

Credentials that carry exactly one policy: STS AssumeRole with the root user and that policy
as the session policy. MinIO then allows a request only if the session policy allows it,
evaluated with its conditions (s3:prefix and the rest), like an assumed IAM role.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import tomllib
from botocore.config import Config

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RULE_SOURCE = HERE / "minio_missing_key.go"
REGION = "us-east-1"
# MinIO's limit for an STS session policy (AWS's packed limit is of the same order).
MAX_SESSION_POLICY = 2048


def pinned_version() -> str:
    with (REPO / "jobs/logberg/versions.toml").open("rb") as fh:
        return str(tomllib.load(fh)["s3"]["minio"])


def build_id() -> str:
    digest = hashlib.sha256(RULE_SOURCE.read_bytes()).hexdigest()[:12]
    return f"{pinned_version()}-{digest}"


def tools_dir() -> Path:
    return Path(os.environ.get("LOGBERG_TOOLS") or REPO / ".tools").resolve()


def binary() -> Path:
    path = tools_dir() / "minio" / build_id() / "minio"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `make eks-minio` (builds MinIO {pinned_version()} "
            "with tests/eks_support/minio_missing_key.go)"
        )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class MinioServer:
    """One MinIO process with its own data directory and random root credentials."""

    data_dir: Path
    log_file: Path
    port: int = 0
    root_user: str = ""
    root_password: str = ""
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        self.port = free_port()
        self.root_user = "logberg-" + secrets.token_hex(6)
        self.root_password = secrets.token_urlsafe(24)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.data_dir),
            "MINIO_ROOT_USER": self.root_user,
            "MINIO_ROOT_PASSWORD": self.root_password,
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
            "MINIO_REGION": REGION,
        }
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(binary()),
                    "server",
                    "--quiet",
                    "--address",
                    f"127.0.0.1:{self.port}",
                    "--console-address",
                    f"127.0.0.1:{free_port()}",
                    str(self.data_dir / "data"),
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        """Until MinIO's readiness endpoint answers 200 (or the process dies)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        url = f"{self.endpoint}/minio/health/ready"
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"minio exited ({self.proc.returncode}); see {self.log_file}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"minio not ready after {timeout}s; see {self.log_file}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def admin_env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": self.root_user,
            "AWS_SECRET_ACCESS_KEY": self.root_password,
            "AWS_REGION": REGION,
        }

    def client(self, env: dict[str, str] | None = None) -> Any:
        creds = env or self.admin_env()
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=creds.get("AWS_SESSION_TOKEN"),
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def role_env(self, policy: dict[str, Any], name: str, seconds: int = 3600) -> dict[str, str]:
        """AWS_* variables of temporary credentials allowed exactly what `policy` allows."""
        text = json.dumps(policy, separators=(",", ":"))
        if len(text) > MAX_SESSION_POLICY:
            raise ValueError(f"{name}: policy is {len(text)} bytes, over {MAX_SESSION_POLICY}")
        sts = boto3.client(
            "sts",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.root_user,
            aws_secret_access_key=self.root_password,
        )
        creds = sts.assume_role(
            RoleArn=f"arn:aws:iam::123456789012:role/{name}",
            RoleSessionName=name,
            Policy=text,
            DurationSeconds=seconds,
        )["Credentials"]
        return {
            "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
            "AWS_SESSION_TOKEN": creds["SessionToken"],
            "AWS_REGION": REGION,
        }
