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

    def __init__(self, fmt: str) -> None:
        assert fmt == "ingress-nginx"
        self.suffixes: list[str] = []
        self.timing: list[tuple[int, int, int]] = []  # request ms, upstream ms, attempts

    @staticmethod
    def empty() -> dict[str, int]:
        return dict.fromkeys(TIMING_KEYS, 0)

    def append(self, rng: random.Random, lines: list[str], mids: list[str]) -> list[str]:
        """The chunk's lines with their suffixes (the lines end after the agent's quote)."""
        self.suffixes, self.timing = [], []
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
            self.timing.append((total, -1, 0))
            return f"{length} {seconds(total)} [] [] - - - - {rid}\n"
        body = "0" if size == "-" else size
        if rng.random() < RETRY_RATE:
            first, second = rng.sample(ENDPOINTS, 2)
            t1, t2 = rng.randint(1, 30), max(0, total - 1)
            total = t1 + t2 + rng.randint(0, 2)
            self.timing.append((total, t1 + t2, 2))
            return (
                f"{length} {seconds(total)} [{UPSTREAM}] [] {first}, {second} 0, {body} "
                f"{seconds(t1)}, {seconds(t2)} 502, {status} {rid}\n"
            )
        up = max(0, total - rng.randint(0, 2))
        self.timing.append((total, up, 1))
        addr = rng.choice(ENDPOINTS)
        timed = f"{addr} {body} {seconds(up)} {status}"
        return f"{length} {seconds(total)} [{UPSTREAM}] [] {timed} {rid}\n"

    def odd_tail(self, rng: random.Random, j: int, status: str) -> str:
        """The rest of an odd line (nginx answered a junk request itself) at index j."""
        length = rng.randint(0, 300)
        total = rng.randint(0, 5)
        self.timing[j] = (total, -1, 0)
        return f' "-" "-" {length} {seconds(total)} [] [] - - - - {rng.getrandbits(128):032x}\n'

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
