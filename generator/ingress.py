"""`--format ingress-nginx`: the controller's `upstreaminfo` fields after the agent.

    ... "$http_user_agent" $request_length $request_time [$proxy_upstream_name]
    [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length
    $upstream_response_time $upstream_status $req_id

Most requests reach one endpoint; a few are retried on a second one after a 502, and then
every upstream field is a list (`a, b`). Requests nginx answers itself (400, 444) have no
upstream: `-` in all four. The sums over the valid lines are the run's ground truth
(`FileResult.timing`).
"""

from __future__ import annotations

import math
import random

from generator.stats import MALFORMED

UPSTREAM = "default-shop-80"
ENDPOINTS = tuple(f"10.244.0.{n}:8080" for n in (12, 13, 17, 21))
RETRY_RATE = 0.01
NO_UPSTREAM = {"400", "444"}
TIMING_KEYS = (
    "request_time_ms",
    "upstream_response_time_ms",
    "upstream_attempts",
    "retried",
    "no_upstream",
)


def seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


class Upstream:
    """Per-chunk suffixes and their timing; `append` starts a chunk."""

    def __init__(self) -> None:
        self.suffixes: list[str] = []
        self.timing: list[tuple[int, int, int]] = []  # request ms, upstream ms, attempts
        # per line: request_length, request_time, upstream name, addr, response length,
        # response time, status, request id (as written)
        self.values: list[tuple[str, ...]] = []

    @staticmethod
    def empty() -> dict[str, int]:
        return dict.fromkeys(TIMING_KEYS, 0)

    def append(self, rng: random.Random, lines: list[str], mids: list[str]) -> list[str]:
        """The chunk's lines with their suffixes (the lines end after the agent's quote)."""
        self.suffixes, self.timing, self.values = [], [], []
        for mid in mids:
            rest = mid[mid.index('"', 3) + 2 :]  # after the request: 'status bytes "ref" "'
            status, size, _ = rest.split(" ", 2)
            self.suffixes.append(self.suffix(rng, status, size))
        return [line + s for line, s in zip(lines, self.suffixes, strict=True)]

    def suffix(self, rng: random.Random, status: str, size: str) -> str:
        length = rng.randint(180, 1400)
        total = min(60_000, int(rng.lognormvariate(math.log(35), 1.0)))
        rid = f"{rng.getrandbits(128):032x}"
        if status in NO_UPSTREAM:
            return self.fields(str(length), total, "", "-", "-", "-", "-", rid, (-1, 0))
        body = "0" if size == "-" else size
        if rng.random() < RETRY_RATE:
            first, second = rng.sample(ENDPOINTS, 2)
            t1, t2 = rng.randint(1, 30), max(0, total - 1)
            total = t1 + t2 + rng.randint(0, 2)
            up = f"{seconds(t1)}, {seconds(t2)}"
            return self.fields(
                str(length), total, UPSTREAM, f"{first}, {second}", f"0, {body}", up,
                f"502, {status}", rid, (t1 + t2, 2),
            )  # fmt: skip
        t = max(0, total - rng.randint(0, 2))
        addr = rng.choice(ENDPOINTS)
        return self.fields(
            str(length), total, UPSTREAM, addr, body, seconds(t), status, rid, (t, 1)
        )

    def fields(
        self,
        length: str,
        total: int,
        name: str,
        addr: str,
        rlen: str,
        urt: str,
        ustatus: str,
        rid: str,
        up: tuple[int, int],
    ) -> str:
        """Record one line's values (`self.values`, its timing) and render its suffix."""
        self.timing.append((total, *up))
        self.values.append((length, seconds(total), name, addr, rlen, urt, ustatus, rid))
        return f"{length} {seconds(total)} [{name}] [] {addr} {rlen} {urt} {ustatus} {rid}\n"

    def odd_tail(self, rng: random.Random, j: int, status: str) -> str:
        """The rest of an odd line (nginx answered a junk request itself) at index j."""
        length = rng.randint(0, 300)
        total = rng.randint(0, 5)
        rid = f"{rng.getrandbits(128):032x}"
        self.timing[j] = (total, -1, 0)
        self.values[j] = (str(length), seconds(total), "", "-", "-", "-", "-", rid)
        self.suffixes[j] = f"{length} {seconds(total)} [] [] - - - - {rid}\n"
        return f' "-" "-" {self.suffixes[j]}'

    def count(self, keys: list[int], res: object) -> None:
        """Add the chunk's valid lines' timing to `res.timing`."""
        timing: dict[str, int] = getattr(res, "timing", None) or self.empty()
        for key, (total, up, attempts) in zip(keys, self.timing, strict=True):
            if key == MALFORMED:
                continue
            timing["request_time_ms"] += total
            if attempts:
                timing["upstream_response_time_ms"] += up
                timing["upstream_attempts"] += attempts
                timing["retried"] += attempts > 1
            else:
                timing["no_upstream"] += 1
        res.timing = timing  # type: ignore[attr-defined]
