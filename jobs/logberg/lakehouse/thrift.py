"""A small Hive Metastore thrift client, with only the Python standard library.

A few calls of ``ThriftHiveMetastore`` (Hive 3.1's IDL), in thrift's binary protocol on
an unframed socket (the metastore's default transport, no SASL): ``get_all_databases``,
``get_all_tables(db)`` and ``get_table(db, table)``, of whose ``Table`` only the
``parameters`` map is kept (Iceberg's ``metadata_location`` is there), and ``lock`` /
``unlock``, the calls Iceberg's HiveCatalog makes around every commit.

Replies are read with a generic binary-protocol reader: a field a call does not need, of
any type, is skipped, so newer metastores that add fields still answer. `logberg doctor`
uses it to make a real call, not just open the port.

It is also the hive-metastore chart's `helm test` probe: charts/hive-metastore/files/
thrift_probe.py is a link to this file, which the test pod runs with `python3 -c` in the
metastore image (Debian's python3-minimal, which holds every module imported here; keep it
to those). As a script it lists the databases and checks that one is there:

    python3 thrift.py HOST PORT [EXPECTED_DB]
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any
from urllib.parse import urlparse

# Message types and the strict binary protocol's version word.
VERSION_1 = 0x80010000
VERSION_MASK = 0xFFFF0000
CALL, REPLY, EXCEPTION, ONEWAY = 1, 2, 3, 4
# Field types of the binary protocol.
T_STOP, T_VOID, T_BOOL, T_BYTE, T_DOUBLE = 0, 1, 2, 3, 4
T_I16, T_I32, T_I64, T_STRING, T_STRUCT = 6, 8, 10, 11, 12
T_MAP, T_SET, T_LIST = 13, 14, 15
# A peer that claims more than this is broken (or not a metastore): fail, do not allocate.
MAX_BYTES = 64 << 20
MAX_ITEMS = 10_000_000
MAX_DEPTH = 64

_FIXED = {T_BOOL: 1, T_BYTE: 1, T_I16: 2, T_I32: 4, T_I64: 8, T_DOUBLE: 8}


class ThriftError(Exception):
    """The metastore could not be reached, or its reply was not thrift."""


class MetastoreError(Exception):
    """The metastore answered with an error: an application exception (e.g. an unknown
    method) or one the call declares (MetaException, NoSuchObjectException)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind
        self.message = message


class NoSuchObjectError(MetastoreError):
    """get_table / get_all_tables of a database or table that does not exist."""


class BinaryReader:
    """Thrift's binary protocol, read from a function that returns exactly n bytes."""

    def __init__(self, read_exact: Callable[[int], bytes]) -> None:
        self._read = read_exact

    def _unpack(self, fmt: str, size: int) -> Any:
        return struct.unpack(fmt, self._read(size))[0]

    def byte(self) -> int:
        return int(self._unpack("!b", 1))

    def bool(self) -> bool:
        return self.byte() != 0

    def i16(self) -> int:
        return int(self._unpack("!h", 2))

    def i32(self) -> int:
        return int(self._unpack("!i", 4))

    def i64(self) -> int:
        return int(self._unpack("!q", 8))

    def double(self) -> float:
        return float(self._unpack("!d", 8))

    def _size(self, limit: int) -> int:
        n = self.i32()
        if not 0 <= n <= limit:
            raise ThriftError(f"bad thrift length {n}")
        return n

    def binary(self) -> bytes:
        return self._read(self._size(MAX_BYTES))

    def string(self) -> str:
        return self.binary().decode("utf-8", "replace")

    def fields(self) -> Iterator[tuple[int, int]]:
        """A struct's fields as (id, type) until its stop byte. The caller reads or
        `skip`s each field's value before asking for the next one."""
        while True:
            ftype = self.byte()
            if ftype == T_STOP:
                return
            yield self.i16(), ftype

    def list_header(self) -> tuple[int, int]:
        """(element type, count) of a list or set."""
        etype = self.byte()
        return etype, self._size(MAX_ITEMS)

    def map_header(self) -> tuple[int, int, int]:
        """(key type, value type, count) of a map."""
        ktype, vtype = self.byte(), self.byte()
        return ktype, vtype, self._size(MAX_ITEMS)

    def skip(self, ttype: int, depth: int = 0) -> None:
        """Read past one value of any type (a field this client does not need)."""
        if depth > MAX_DEPTH:
            raise ThriftError("thrift value nested too deep")
        if ttype in _FIXED:
            self._read(_FIXED[ttype])
        elif ttype == T_STRING:
            self.binary()
        elif ttype == T_STRUCT:
            for _, ftype in self.fields():
                self.skip(ftype, depth + 1)
        elif ttype in (T_LIST, T_SET):
            etype, n = self.list_header()
            for _ in range(n):
                self.skip(etype, depth + 1)
        elif ttype == T_MAP:
            ktype, vtype, n = self.map_header()
            for _ in range(n):
                self.skip(ktype, depth + 1)
                self.skip(vtype, depth + 1)
        else:
            raise ThriftError(f"unknown thrift type {ttype}")

    def string_list(self) -> list[str]:
        etype, n = self.list_header()
        if etype != T_STRING:
            for _ in range(n):
                self.skip(etype)
            raise ThriftError(f"expected a list of strings, got element type {etype}")
        return [self.string() for _ in range(n)]

    def string_map(self) -> dict[str, str]:
        ktype, vtype, n = self.map_header()
        if (ktype, vtype) != (T_STRING, T_STRING):
            for _ in range(n):
                self.skip(ktype)
                self.skip(vtype)
            raise ThriftError(f"expected map<string,string>, got types {ktype}, {vtype}")
        return {self.string(): self.string() for _ in range(n)}

    def message_begin(self) -> tuple[str, int, int]:
        """(method name, message type, sequence id), strict or old-style header."""
        first = self.i32()
        if first < 0:  # strict: version word | type, then the name
            word = first & 0xFFFFFFFF
            if word & VERSION_MASK != VERSION_1:
                raise ThriftError(f"unexpected thrift version word {word:#x}")
            name = self.string()
            return name, word & 0xFF, self.i32()
        if first > MAX_BYTES:
            raise ThriftError(f"not a thrift reply (first word {first:#x})")
        name = self._read(first).decode("utf-8", "replace")
        mtype = self.byte()
        return name, mtype, self.i32()


class _Writer:
    """The few binary-protocol pieces the calls need: a message header and fields."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def message_begin(self, name: str, mtype: int, seqid: int) -> None:
        raw = name.encode()
        self.buf += struct.pack("!Ii", VERSION_1 | mtype, len(raw)) + raw
        self.buf += struct.pack("!i", seqid)

    def field(self, ttype: int, fid: int) -> None:
        self.buf += struct.pack("!bh", ttype, fid)

    def string_field(self, fid: int, value: str) -> None:
        raw = value.encode()
        self.buf += struct.pack("!bhi", T_STRING, fid, len(raw)) + raw

    def i32_field(self, fid: int, value: int) -> None:
        self.buf += struct.pack("!bhi", T_I32, fid, value)

    def i64_field(self, fid: int, value: int) -> None:
        self.buf += struct.pack("!bhq", T_I64, fid, value)

    def list_field(self, fid: int, elem_type: int, size: int) -> None:
        """A list's header; its elements follow (structs: fields, then stop)."""
        self.buf += struct.pack("!bhbi", T_LIST, fid, elem_type, size)

    def stop(self) -> None:
        self.buf.append(T_STOP)


def _exception_message(r: BinaryReader) -> str:
    """Field 1 (`message`) of a declared exception struct; other fields skipped."""
    message = ""
    for fid, ftype in r.fields():
        if fid == 1 and ftype == T_STRING:
            message = r.string()
        else:
            r.skip(ftype)
    return message


# Declared exceptions of the three calls, by result field id.
_EXCEPTIONS: dict[str, dict[int, str]] = {
    "get_all_databases": {1: "MetaException"},
    "get_all_tables": {1: "MetaException"},
    "get_table": {1: "MetaException", 2: "NoSuchObjectException"},
    "lock": {1: "NoSuchTxnException", 2: "TxnAbortedException"},
    "unlock": {1: "NoSuchLockException", 2: "TxnOpenException"},
}

# Enums of the lock calls (hive_metastore.thrift).
LOCK_EXCLUSIVE = 3
LEVEL_TABLE = 2
OPERATION_NO_TXN = 6
LOCK_STATES = {1: "ACQUIRED", 2: "WAITING", 3: "ABORT", 4: "NOT_ACQUIRED"}


class HiveMetastoreClient:
    """One connection to a Hive Metastore; calls run one after another on it.

    Use as a context manager, or call `close`. Raises ThriftError when the metastore
    cannot be reached or does not speak thrift, MetastoreError when it answers with one.
    """

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._seqid = 0

    @classmethod
    def from_uri(cls, uri: str, timeout: float = 10.0) -> HiveMetastoreClient:
        """thrift://host:port (the first of a comma-separated list)."""
        parsed = urlparse(uri.split(",")[0].strip())
        if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
            raise ValueError(f"{uri!r}: expected thrift://host:port")
        return cls(parsed.hostname, parsed.port, timeout)

    def __enter__(self) -> HiveMetastoreClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        if self._sock is None:
            try:
                self._sock = socket.create_connection((self.host, self.port), self.timeout)
            except OSError as e:
                raise ThriftError(f"cannot connect to {self.host}:{self.port}: {e}") from None
        return self._sock

    def _read_exact(self, n: int) -> bytes:
        sock = self._connect()
        chunks = []
        left = n
        while left:
            try:
                chunk = sock.recv(min(left, 1 << 20))
            except OSError as e:
                self.close()
                raise ThriftError(f"reading from {self.host}:{self.port}: {e}") from None
            if not chunk:
                self.close()
                raise ThriftError(f"{self.host}:{self.port} closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _call(
        self,
        method: str,
        args: list[str] | Callable[[_Writer], None],
        success_type: int | None,
        read_success: Callable[[BinaryReader], Any] | None = None,
    ) -> Any:
        """Send `method(args...)` (string arguments, field ids 1..n, or a function that
        writes the argument fields) and read its result struct: field 0 (of
        `success_type`; None for a void call) through `read_success`, a declared exception
        raised, any other field skipped."""
        self._seqid += 1
        w = _Writer()
        w.message_begin(method, CALL, self._seqid)
        if callable(args):
            args(w)
        else:
            for fid, value in enumerate(args, start=1):
                w.string_field(fid, value)
        w.stop()
        sock = self._connect()
        try:
            sock.sendall(bytes(w.buf))
        except OSError as e:
            self.close()
            raise ThriftError(f"sending to {self.host}:{self.port}: {e}") from None
        r = BinaryReader(self._read_exact)
        name, mtype, seqid = r.message_begin()
        if mtype == EXCEPTION:  # TApplicationException {1: message, 2: type}
            raise MetastoreError("TApplicationException", _exception_message(r))
        if mtype != REPLY or name != method or seqid != self._seqid:
            self.close()
            raise ThriftError(f"unexpected reply {name!r} (type {mtype}, seqid {seqid})")
        success: Any = None
        have_success = False
        error: MetastoreError | None = None
        declared = _EXCEPTIONS.get(method, {})
        for fid, ftype in r.fields():
            if fid == 0 and ftype == success_type and read_success is not None:
                success = read_success(r)
                have_success = True
            elif fid in declared and ftype == T_STRUCT:
                kind = declared[fid]
                cls = NoSuchObjectError if kind == "NoSuchObjectException" else MetastoreError
                error = cls(kind, _exception_message(r))
            else:
                r.skip(ftype)
        if error is not None:
            raise error
        if not have_success and success_type is not None:
            raise MetastoreError("MissingResult", f"{method} returned no result")
        return success

    def get_all_databases(self) -> list[str]:
        result: list[str] = self._call("get_all_databases", [], T_LIST, BinaryReader.string_list)
        return result

    def get_all_tables(self, db: str) -> list[str]:
        result: list[str] = self._call("get_all_tables", [db], T_LIST, BinaryReader.string_list)
        return result

    def get_table(self, db: str, table: str) -> dict[str, str]:
        """The table's `parameters` map (Table field 9); every other field is skipped."""

        def read_table(r: BinaryReader) -> dict[str, str]:
            params: dict[str, str] = {}
            for fid, ftype in r.fields():
                if fid == 9 and ftype == T_MAP:
                    params = r.string_map()
                else:
                    r.skip(ftype)
            return params

        result: dict[str, str] = self._call("get_table", [db, table], T_STRUCT, read_table)
        return result

    def lock(self, db: str, table: str, user: str, hostname: str) -> tuple[int, str]:
        """Take the lock Iceberg's commit takes (exclusive, on the table), outside any
        transaction. Returns (lock id, state): the metastore keeps it in its lock tables
        until `unlock`."""

        def write(w: _Writer) -> None:
            w.field(T_STRUCT, 1)  # rqst: LockRequest
            w.list_field(1, T_STRUCT, 1)  # component: one LockComponent
            w.i32_field(1, LOCK_EXCLUSIVE)
            w.i32_field(2, LEVEL_TABLE)
            w.string_field(3, db)
            w.string_field(4, table)
            w.i32_field(6, OPERATION_NO_TXN)
            w.stop()
            w.string_field(3, user)
            w.string_field(4, hostname)
            w.string_field(5, "logberg")  # agentInfo
            w.stop()

        def read_response(r: BinaryReader) -> tuple[int, str]:
            lockid, state = -1, 0
            for fid, ftype in r.fields():
                if fid == 1 and ftype == T_I64:
                    lockid = r.i64()
                elif fid == 2 and ftype == T_I32:
                    state = r.i32()
                else:
                    r.skip(ftype)
            return lockid, LOCK_STATES.get(state, f"state {state}")

        result: tuple[int, str] = self._call("lock", write, T_STRUCT, read_response)
        return result

    def unlock(self, lockid: int) -> None:
        def write(w: _Writer) -> None:
            w.field(T_STRUCT, 1)  # rqst: UnlockRequest
            w.i64_field(1, lockid)
            w.stop()

        self._call("unlock", write, None)


def main(argv: list[str], wait: Callable[[float], None] = time.sleep) -> int:
    """The probe: get_all_databases from HOST PORT, tried up to 6 times 5 s apart (the
    metastore may still be starting); 0 when EXPECTED_DB (default `default`) is listed."""
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    host, port = argv[0], int(argv[1])
    expected = argv[2] if len(argv) > 2 else "default"
    attempts = 6
    last: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            with HiveMetastoreClient(host, port, timeout=30.0) as client:
                dbs = client.get_all_databases()
        except (OSError, ThriftError, MetastoreError) as e:
            last = e
            print(f"attempt {attempt}: {e}", file=sys.stderr)
            if attempt < attempts:
                wait(5)
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
