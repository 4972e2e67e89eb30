#!/usr/bin/python3
"""kafka-api-versions HOST:PORT [TIMEOUT_S]: one Kafka ApiVersions request (v0), the first
call every Kafka client makes. Exit 0 when the broker answers it without an error, 1 when
it cannot be reached or answers wrongly (the reason on stderr). The dev broker's readiness
probe, and the network policy tests' client from inside pods. Standard library only."""

import socket
import struct
import sys

API_VERSIONS = 18
CORRELATION = 0x10C6B


def request() -> bytes:
    client = b"logberg-probe"
    body = struct.pack(">hhih", API_VERSIONS, 0, CORRELATION, len(client)) + client
    return struct.pack(">i", len(body)) + body


def read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return out


def api_count(host: str, port: int, timeout: float) -> int:
    """How many APIs the broker lists; raises when it does not answer as a broker."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(request())
        (size,) = struct.unpack(">i", read(sock, 4))
        if not 10 <= size <= 1 << 20:
            raise ValueError(f"an answer of {size} bytes is not an ApiVersions response")
        reply = read(sock, size)
    correlation, error, count = struct.unpack(">ihi", reply[:10])
    if correlation != CORRELATION:
        raise ValueError(f"correlation id {correlation}, sent {CORRELATION}")
    if error != 0:
        raise ValueError(f"ApiVersions error code {error}")
    return count


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or ":" not in argv[0]:
        print("usage: kafka-api-versions HOST:PORT [TIMEOUT_S]", file=sys.stderr)
        return 2
    host, _, port = argv[0].rpartition(":")
    timeout = float(argv[1]) if len(argv) == 2 else 5.0
    try:
        count = api_count(host, int(port), timeout)
    except (OSError, ValueError) as e:
        print(f"{argv[0]}: no ApiVersions answer: {e}", file=sys.stderr)
        return 1
    print(f"{argv[0]} answers ApiVersions: {count} APIs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
