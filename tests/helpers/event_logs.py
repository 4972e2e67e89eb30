"""Spark event-log files as text: zstd frames (spark.eventLog.compression.codec=zstd),
decompressed across frames. A running application's last file ends mid-frame; what its
complete frames hold is kept and the torn end is left out."""

from __future__ import annotations

import io
from typing import BinaryIO

import zstandard


def text(raw: BinaryIO | bytes) -> str:
    """The events of one event-log file (its bytes, or an open binary file)."""
    stream = io.BytesIO(raw) if isinstance(raw, bytes) else raw
    reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
    chunks = []
    try:
        while chunk := reader.read(1 << 20):
            chunks.append(chunk)
    except zstandard.ZstdError:
        pass  # a torn last frame (the application still runs)
    return b"".join(chunks).decode("utf-8", "replace")
