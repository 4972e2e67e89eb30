"""A minimal DNS A-record lookup over UDP: `up` asks the cluster DNS Service from the host."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import struct

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def query_a(server: str, name: str, timeout: float = 2.0) -> tuple[str, list[str]]:
    """(rcode name, A records) for name, asked of server:53. Raises OSError on no answer."""
    qid = secrets.randbits(16)
    header = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)  # recursion desired, 1 question
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    packet = header + qname + struct.pack(">HH", 1, 1)  # type A, class IN
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(packet, (server, 53))
        while True:
            data, _ = sock.recvfrom(4096)
            if len(data) >= 12 and struct.unpack(">H", data[:2])[0] == qid:
                break
    flags, qdcount, ancount = struct.unpack(">HHH", data[2:8])
    pos = 12
    for _ in range(qdcount):
        pos = _skip_name(data, pos) + 4
    addrs = []
    for _ in range(ancount):
        pos = _skip_name(data, pos)
        rtype, _cls, _ttl, rdlen = struct.unpack(">HHIH", data[pos : pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            addrs.append(str(ipaddress.IPv4Address(data[pos : pos + 4])))
        pos += rdlen
    return RCODES.get(flags & 0xF, str(flags & 0xF)), addrs


def _skip_name(data: bytes, pos: int) -> int:
    while True:
        length = data[pos]
        if length == 0:
            return pos + 1
        if length & 0xC0 == 0xC0:  # compression pointer
            return pos + 2
        pos += 1 + length
