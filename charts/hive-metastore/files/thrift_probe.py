"""A real Hive Metastore call over thrift, with only the Python standard library.

Sends ThriftHiveMetastore.get_all_databases() in the binary protocol on an unframed socket
(the metastore's default transport without SASL) and prints the databases. Exits 0 when
the call succeeds and the expected database is listed; used by `helm test`.

    python3 thrift_probe.py HOST PORT [EXPECTED_DB]
"""

from __future__ import annotations

import socket
import struct
import sys
import time

VERSION_1 = 0x80010000
CALL, REPLY, EXCEPTION = 1, 2, 3
T_STOP, T_BOOL, T_BYTE, T_DOUBLE, T_I16, T_I32, T_I64 = 0, 2, 3, 4, 6, 8, 10
T_STRING, T_STRUCT, T_MAP, T_SET, T_LIST = 11, 12, 13, 14, 15


class Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("metastore closed the connection")
            buf += chunk
        return buf

    def byte(self) -> int:
        return int(struct.unpack("!b", self.exact(1))[0])

    def i16(self) -> int:
        return int(struct.unpack("!h", self.exact(2))[0])

    def i32(self) -> int:
        return int(struct.unpack("!i", self.exact(4))[0])

    def u32(self) -> int:
        return int(struct.unpack("!I", self.exact(4))[0])

    def string(self) -> str:
        return self.exact(self.i32()).decode("utf-8", "replace")

    def value(self, ttype: int) -> object:
        if ttype == T_BOOL:
            return self.byte() != 0
        if ttype == T_BYTE:
            return self.byte()
        if ttype == T_I16:
            return self.i16()
        if ttype == T_I32:
            return self.i32()
        if ttype in (T_I64, T_DOUBLE):
            return self.exact(8)
        if ttype == T_STRING:
            return self.string()
        if ttype == T_STRUCT:
            return self.struct()
        if ttype in (T_LIST, T_SET):
            etype, size = self.byte(), self.i32()
            return [self.value(etype) for _ in range(size)]
        if ttype == T_MAP:
            ktype, vtype, size = self.byte(), self.byte(), self.i32()
            pairs = [(self.value(ktype), self.value(vtype)) for _ in range(size)]
            return {repr(k): v for k, v in pairs}  # keys of any thrift type, as text
        raise ValueError(f"unknown thrift type {ttype}")

    def struct(self) -> dict[int, object]:
        fields: dict[int, object] = {}
        while True:
            ftype = self.byte()
            if ftype == T_STOP:
                return fields
            fid = self.i16()
            fields[fid] = self.value(ftype)


def call_get_all_databases(host: str, port: int, timeout: float = 30.0) -> list[str]:
    name = b"get_all_databases"
    msg = struct.pack("!II", VERSION_1 | CALL, len(name)) + name + struct.pack("!i", 1)
    msg += bytes([T_STOP])  # empty argument struct
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(msg)
        r = Reader(sock)
        header = r.u32()
        if header & 0xFFFF0000 != VERSION_1:
            raise ValueError(f"unexpected thrift header {header:#x}")
        mtype = header & 0xFF
        r.string()  # method name
        r.i32()  # sequence id
        result = r.struct()
    if mtype == EXCEPTION:
        raise RuntimeError(f"metastore application exception: {result.get(1)}")
    if mtype != REPLY:
        raise ValueError(f"unexpected thrift message type {mtype}")
    databases = result.get(0)
    if isinstance(databases, list):
        return [str(d) for d in databases]
    raise RuntimeError(f"metastore error: {result}")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    host, port = argv[0], int(argv[1])
    expected = argv[2] if len(argv) > 2 else "default"
    last: Exception | None = None
    for attempt in range(1, 7):
        try:
            dbs = call_get_all_databases(host, port)
        except (OSError, ValueError, RuntimeError) as e:
            last = e
            print(f"attempt {attempt}: {e}", file=sys.stderr)
            time.sleep(5)
            continue
        print(f"databases in thrift://{host}:{port}: {', '.join(dbs) or '(none)'}")
        if expected and expected not in dbs:
            print(f"expected database {expected!r} is missing", file=sys.stderr)
            return 1
        return 0
    print(f"get_all_databases failed: {last}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
