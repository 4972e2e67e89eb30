"""Text of log lines: timestamps, malformed lines and odd-but-valid lines."""

from __future__ import annotations

import random
import string
from datetime import date, timedelta

from generator.timeline import DAY

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MALFORMED_KINDS = ("truncated", "bad_timestamp", "garbage")
ODD_KINDS = ("tls", "dash", "http09")


class Clock:
    """$time_local text for epoch seconds: "10/Jan/2025:13:55:36 +0000", cached per day."""

    def __init__(self, tz: str, offset_sec: int) -> None:
        self.offset = offset_sec
        # ":HH:MM:SS +zzzz" for every second of the day, from 24 + 60 + 60 parts (a tenth of
        # the CPU time of formatting 86,400 times; it is paid once per run).
        hh = [f":{h:02d}" for h in range(24)]
        mm = [f":{m:02d}" for m in range(60)]
        ss = [f":{s:02d} {tz}" for s in range(60)]
        self.hms = [h + m + s for h in hh for m in mm for s in ss]
        self._days: dict[int, str] = {}

    def day(self, local_day: int) -> str:
        text = self._days.get(local_day)
        if text is None:
            d = date(1970, 1, 1) + timedelta(days=local_day)
            text = self._days[local_day] = f"{d.day:02d}/{MONTHS[d.month - 1]}/{d.year}"
        return text

    def render(self, secs: list[int]) -> list[str]:
        off, hms, days = self.offset, self.hms, self._days
        first, last = (secs[0] + off) // DAY, (secs[-1] + off) // DAY
        for d in range(first, last + 1):
            self.day(d)
        return [days[(s + off) // DAY] + hms[(s + off) % DAY] for s in secs]


def bad_timestamp(rng: random.Random, tz: str) -> str:
    """A timestamp shaped like $time_local whose day, month and time cannot exist."""
    day = rng.choice((0, *range(32, 100)))
    month = rng.choice(("Foo", "Xyz", "Jnu", "Dex", "Mrz", "Okt", "Smb"))
    year = rng.randint(2000, 2099)
    return f"{day:02d}/{month}/{year}:{rng.randint(24, 99)}:{rng.randint(60, 99)}:00 {tz}"


_JUNK = string.ascii_letters + string.digits + "!#$%&'()*+,-./:;<=>?@^_`{|}~ "
_JUNK_START = "<{#*!~=%&"
_GARBAGE = (
    "GIF89a",
    "<html><head><title>502 Bad Gateway</title></head>",
    "PROXY TCP4 unknown",
    "level=error msg=upstream timed out",
    "Zm9vYmFyYmF6cXV4",
    "===== log rotated =====",
)


def garbage(rng: random.Random) -> str:
    """Printable junk with no log structure: never starts like an IP, has no [ or "."""
    if rng.random() < 0.4:
        return rng.choice(_GARBAGE)
    body = "".join(rng.choices(_JUNK, k=rng.randint(8, 120))).rstrip()
    return rng.choice(_JUNK_START) + body


def truncate(rng: random.Random, line: str, ip_len: int, ua_close: int) -> str:
    """The line cut somewhere after the IP and before the closing quote of the user agent."""
    return line[: rng.randint(ip_len + 1, ua_close)]


def _tls_request(rng: random.Random) -> str:
    """A TLS ClientHello as nginx logs it on a plain-HTTP port (non-printables as \\xHH)."""
    raw = bytes((0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03))
    raw += rng.randbytes(rng.randint(8, 40))
    out = []
    for b in raw:
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02X}")
    return "".join(out)


def odd_request(rng: random.Random) -> tuple[str, str, str]:
    """(kind, request field, status and bytes) of a line nginx writes for junk requests."""
    u = rng.random()
    if u < 0.6:
        return "tls", _tls_request(rng), "400 157" if rng.random() < 0.7 else "400 0"
    if u < 0.85:
        return "dash", "-", "400 0" if rng.random() < 0.5 else "400 150"
    return "http09", rng.choice(("GET /", "GET /index.html")), "400 157"
