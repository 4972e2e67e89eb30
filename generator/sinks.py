"""Where files go: a background writer thread (gzip, sha256) and local or S3 destinations."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import queue
import shutil
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

# Level 1: about twice as fast as 6 on this data, files about a third bigger.
GZIP_LEVEL = 1


class _Tee:
    """A write-only file object that also hashes and counts what passes through."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, b: bytes) -> int:
        self.sha.update(b)
        self.size += len(b)
        return self.f.write(b)

    def flush(self) -> None:
        self.f.flush()


@dataclass(frozen=True)
class Written:
    bytes: int  # as stored (compressed if gzip)
    uncompressed_bytes: int
    sha256: str  # of the stored bytes


class FileWriter:
    """Writes chunks to `path` on a background thread, so compression and I/O overlap
    with generating the next chunk (zlib, hashlib and file writes release the GIL)."""

    def __init__(self, path: Path, use_gzip: bool, level: int | None = None) -> None:
        self._q: queue.Queue[bytes | None] = queue.Queue(maxsize=2)
        self._raw = open(path, "wb")  # noqa: SIM115 (closed by the thread)
        self._tee = _Tee(self._raw)
        self._gz = (
            # mtime=0 and no file name in the header: the same input gives the same bytes.
            gzip.GzipFile(
                filename="",
                mode="wb",
                fileobj=self._tee,
                compresslevel=level or GZIP_LEVEL,
                mtime=0,
            )
            if use_gzip
            else None
        )
        self._plain = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="generator-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        out: Any = self._tee if self._gz is None else self._gz
        done = False
        try:
            while (chunk := self._q.get()) is not None:
                out.write(chunk)
                self._plain += len(chunk)
            done = True
            if self._gz is not None:
                self._gz.close()
        except BaseException as e:  # surfaced by write()/close()
            self._error = e
            while not done:  # keep consuming so the producer never blocks
                done = self._q.get() is None
        finally:
            self._raw.close()

    def write(self, chunk: bytes) -> None:
        if self._error is not None:
            raise self._error
        self._q.put(chunk)

    def close(self) -> Written:
        self._q.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
        return Written(self._tee.size, self._plain, self._tee.sha.hexdigest())

    def abort(self) -> None:
        with contextlib.suppress(BaseException):
            self._q.put(None)
            self._thread.join()


class Writer(Protocol):
    """What a destination's `open` gives: chunks of whole lines in, what was written out."""

    def write(self, chunk: bytes) -> None: ...

    def close(self) -> Written: ...

    def abort(self) -> None: ...


class Destination:
    """A place for data files and the manifest, addressed by paths relative to its root."""

    root_uri: str

    @property
    def manifest_root(self) -> str:
        """Where `put_last` puts the manifest (the root, unless the data goes elsewhere)."""
        return self.root_uri

    def open(self, rel: str, use_gzip: bool) -> tuple[Writer, Path]:
        """A writer to a temporary local file for `rel`."""
        raise NotImplementedError

    def commit(self, tmp: Path, rel: str) -> str:
        """Publish a finished temporary file under `rel`; returns its URI."""
        raise NotImplementedError

    def put_last(self, rel: str, data: bytes) -> str:
        """Wait for all commits, then write `data` under `rel` (the manifest)."""
        raise NotImplementedError

    def close(self, ok: bool) -> None:
        """Release resources; on failure, remove temporary files."""


class LocalDestination(Destination):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_uri = root.as_uri()
        self._tmps: set[Path] = set()

    def open(self, rel: str, use_gzip: bool) -> tuple[FileWriter, Path]:
        final = self.root / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        # A hidden name (Spark and Hadoop skip it) that becomes the real one when complete.
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        self._tmps.add(tmp)
        return FileWriter(tmp, use_gzip), tmp

    def commit(self, tmp: Path, rel: str) -> str:
        final = self.root / rel
        os.replace(tmp, final)
        self._tmps.discard(tmp)
        return f"{self.root_uri}/{rel}"

    def put_last(self, rel: str, data: bytes) -> str:
        final = self.root / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, final)
        return f"{self.root_uri}/{rel}"

    def close(self, ok: bool) -> None:
        for tmp in self._tmps:
            tmp.unlink(missing_ok=True)


class S3Destination(Destination):
    """Files are written to a local temporary directory, then uploaded (multipart for
    big ones) on a background thread while the next file is generated."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        from boto3.s3.transfer import TransferConfig

        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root_uri = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self._tmpdir = Path(tempfile.mkdtemp(prefix="logberg-generate-"))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="generator-upload")
        self._pending: list[Future[None]] = []
        self._transfer = TransferConfig(
            multipart_threshold=64 * 1024 * 1024,
            multipart_chunksize=16 * 1024 * 1024,
            max_concurrency=4,
        )

    def key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def open(self, rel: str, use_gzip: bool) -> tuple[FileWriter, Path]:
        # Keep at most one finished file waiting on disk: bounded local space.
        self._drain(keep=1)
        tmp = self._tmpdir / rel.replace("/", "_")
        return FileWriter(tmp, use_gzip), tmp

    def _upload(self, tmp: Path, key: str) -> None:
        try:
            self.client.upload_file(str(tmp), self.bucket, key, Config=self._transfer)
        finally:
            tmp.unlink(missing_ok=True)

    def commit(self, tmp: Path, rel: str) -> str:
        key = self.key(rel)
        self._pending.append(self._pool.submit(self._upload, tmp, key))
        return f"s3://{self.bucket}/{key}"

    def _drain(self, keep: int) -> None:
        while len(self._pending) > keep:
            self._pending.pop(0).result()

    def put_last(self, rel: str, data: bytes) -> str:
        self._drain(keep=0)
        key = self.key(rel)
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=data, ContentType="application/json"
        )
        return f"s3://{self.bucket}/{key}"

    def close(self, ok: bool) -> None:
        for f in self._pending:
            f.cancel()
        self._pool.shutdown(wait=True)
        shutil.rmtree(self._tmpdir, ignore_errors=True)


def s3_client(endpoint_url: str | None, preflight: bool = False) -> Any:
    """A boto3 S3 client (standard credential chain); short timeouts for the preflight."""
    import boto3
    from botocore.config import Config

    cfg = Config(
        retries={"max_attempts": 2 if preflight else 10, "mode": "standard"},
        connect_timeout=5 if preflight else 30,
        read_timeout=10 if preflight else 120,
        # S3-compatible servers (given by flag or AWS_ENDPOINT_URL[_S3]) want path style.
        s3={"addressing_style": "path"} if endpoint_url or _env_endpoint() else None,
    )
    return boto3.client("s3", endpoint_url=endpoint_url, config=cfg)


def _env_endpoint() -> bool:
    return bool(os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))


def check_bucket(endpoint_url: str | None, bucket: str) -> str | None:
    """None if the bucket is reachable and exists, else a one-line reason."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    where = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or "AWS S3"
    try:
        s3_client(endpoint_url, preflight=True).head_bucket(Bucket=bucket)
    except NoCredentialsError:
        return "no S3 credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile)"
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket", "NotFound"):
            return f"bucket {bucket!r} does not exist at {where}"
        if code in ("403", "AccessDenied", "Forbidden"):
            return f"access to bucket {bucket!r} at {where} is denied"
        return f"bucket {bucket!r} at {where}: {code or e}"
    except (BotoCoreError, ValueError) as e:
        return f"cannot reach S3 at {where}: {one_line(e)}"
    return None


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__
