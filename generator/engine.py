"""Generating a run: files of sorted log lines, streamed to a destination, then the
ground-truth manifest."""

from __future__ import annotations

import itertools
import json
import math
import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from generator import __version__, jsonlog
from generator.clients import ClientPool, build_clients
from generator.config import Config, Output
from generator.ingress import Upstream
from generator.model import ODD_RATE
from generator.progress import Progress
from generator.render import (
    MALFORMED_KINDS,
    ODD_KINDS,
    Clock,
    bad_timestamp,
    garbage,
    odd_request,
    truncate,
)
from generator.sinks import Destination, LocalDestination, S3Destination, s3_client
from generator.site import POOL_SIZE, build_pools
from generator.stats import MALFORMED, DayCounts, odd_key, summaries
from generator.timeline import DAY, Intensity, iso, sorted_times, windows
from generator.words import build_words, faker_for

CHUNK = 32_768  # lines rendered and handed to the writer at a time
RAW_PREFIX = "raw/nginx"
_MALFORMED_WEIGHTS = (0.5, 0.25, 0.25)  # truncated, bad_timestamp, garbage


class _Gaps:
    """Positions of a Bernoulli(p) process over line numbers, by geometric gaps."""

    def __init__(self, rng: random.Random, p: float) -> None:
        self.rng = rng
        self.log_q = math.log1p(-p) if 0.0 < p < 1.0 else 0.0
        self.p = p
        self.next = -1
        self.advance()

    def advance(self) -> None:
        if self.p <= 0.0:
            self.next = 1 << 62
        elif self.p >= 1.0:
            self.next += 1
        else:
            self.next += 1 + int(math.log(1.0 - self.rng.random()) / self.log_q)


@dataclass
class FileResult:
    index: int
    path: str  # relative to the output root
    uri: str
    dt: str
    window_start: str
    window_end: str
    first_ts: str
    last_ts: str
    lines: int = 0
    valid: int = 0
    malformed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MALFORMED_KINDS, 0))
    malformed_total: int = 0
    odd_valid: int = 0
    odd_valid_kinds: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ODD_KINDS, 0))
    # ingress-nginx only: sums over the valid lines ($request_time, $upstream_response_time)
    timing: dict[str, int] | None = None
    bytes: int = 0
    uncompressed_bytes: int = 0
    sha256: str = ""


class LineMaker:
    """Renders lines for a client pool; everything per client is pre-rendered."""

    def __init__(self, cfg: Config, pool: ClientPool, pools: dict[str, tuple[str, ...]]) -> None:
        self.pool = pool
        self.clock = Clock(cfg.tz, cfg.tz_offset)
        self.tz = cfg.tz
        main = cfg.fmt == "main"
        # ingress-nginx and json lines carry timing and upstream fields (`Upstream`); json
        # lines are ingress-nginx lines rewritten as JSON at the end (`jsonlog`).
        self.json = cfg.fmt == "json"
        # json, per chunk: truncated lines (as ingress lines, before the cut), garbage lines
        self.cut: dict[int, str] = {}
        self.garbage: set[int] = set()
        self.upstream = Upstream() if cfg.fmt in ("ingress-nginx", "json") else None
        self.heads = [f"{ip} - {u} [" for ip, u in zip(pool.ips, pool.users, strict=True)]
        self.tails = [
            f'{a.ua}" "{x}"\n' if main else f'{a.ua}" ' if self.upstream else f'{a.ua}"\n'
            for a, x in zip(pool.agents, pool.xffs, strict=True)
        ]
        # Characters from the closing quote of the user agent to the end of the line.
        self.after_ua = [len(t) - len(a.ua) for t, a in zip(self.tails, pool.agents, strict=True)]
        self.frags = [pools[r] for r in pool.roles]
        self.odd_tail = ' "-" "-" "-"\n' if main else ' "-" "-"\n'

    def render(
        self,
        rng: random.Random,
        secs: list[int],
        cl: list[int],
        base: int,
        bad: _Gaps,
        odd: _Gaps,
        res: FileResult,
    ) -> bytes:
        """Lines for times `secs` and clients `cl` (line numbers base...); replaces the
        entries of `cl` of malformed and odd lines by their stats keys."""
        heads, tails, frags = self.heads, self.tails, self.frags
        rnd = rng.random
        stamps = self.clock.render(secs)
        mids = [f[int(rnd() * POOL_SIZE)] for f in map(frags.__getitem__, cl)]
        lines = [f"{heads[c]}{t}{m}{tails[c]}" for c, t, m in zip(cl, stamps, mids, strict=True)]
        up = self.upstream
        if up is not None:
            lines = up.append(rng, lines, mids)
        end = base + len(secs)
        self.cut, self.garbage = {}, set()
        while odd.next < end or bad.next < end:
            if bad.next <= odd.next:
                j = bad.next - base
                if odd.next == bad.next:
                    odd.advance()
                bad.advance()
                self._malformed(rng, lines, j, cl[j], mids[j], res)
                cl[j] = MALFORMED
            else:
                j = odd.next - base
                odd.advance()
                kind, request, status = odd_request(rng)
                ip = self.pool.ips[cl[j]]
                tail = self.odd_tail if up is None else up.odd_tail(rng, j, status)
                lines[j] = f'{ip} - - [{stamps[j]}] "{request}" {status}{tail}'
                res.odd_valid_kinds[kind] += 1
                cl[j] = odd_key(cl[j])
        if up is not None:
            up.count(cl, res)
        if self.json:
            assert up is not None
            lines = self.as_json(rng, lines, cl, up.values)
        return "".join(lines).encode()

    def as_json(
        self, rng: random.Random, lines: list[str], cl: list[int], values: list[tuple[str, ...]]
    ) -> list[str]:
        """The chunk as JSON lines; garbage stays garbage, a truncated line is its JSON cut
        before the closing brace."""
        out = []
        for j, text in enumerate(lines):
            if j in self.cut:
                js = jsonlog.line(self.cut[j], values[j])
                out.append(js[: rng.randint(len('{"time_local":"') + 1, len(js) - 3)] + "\n")
            elif j in self.garbage:
                out.append(text)
            else:
                out.append(jsonlog.line(text, values[j]))
        return out

    def _malformed(
        self,
        rng: random.Random,
        lines: list[str],
        j: int,
        c: int,
        mid: str,
        res: FileResult,
    ) -> None:
        kind = rng.choices(MALFORMED_KINDS, weights=_MALFORMED_WEIGHTS)[0]
        suffix = "" if self.upstream is None else self.upstream.suffixes[j]
        if kind == "truncated" and self.json:
            self.cut[j] = lines[j]
        elif kind == "truncated":
            line = lines[j]
            ua_close = len(line) - self.after_ua[c] - len(suffix)
            lines[j] = truncate(rng, line, len(self.pool.ips[c]), ua_close) + "\n"
        elif kind == "bad_timestamp":
            stamp = bad_timestamp(rng, self.tz)
            lines[j] = f"{self.heads[c]}{stamp}{mid}{self.tails[c]}{suffix}"
        else:
            lines[j] = garbage(rng) + "\n"
            self.garbage.add(j)
        res.malformed[kind] += 1


def _date_of(ts: int) -> str:
    return (date(1970, 1, 1) + timedelta(days=ts // DAY)).isoformat()


class Generator:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.run_id = cfg.run_id
        seed = cfg.seed
        # Faker is called here, once per run, for the text pools; never per line.
        words = build_words(faker_for(seed))
        self.pool = build_clients(
            random.Random(f"logberg/{seed}/clients"), cfg.clients, words.users
        )
        pools = build_pools(random.Random(f"logberg/{seed}/site"), words)
        self.maker = LineMaker(cfg, self.pool, pools)
        self.intensity = Intensity(cfg.tz_offset)
        self.days = DayCounts()

    def file_name(self, i: int) -> str:
        width = max(5, len(str(self.cfg.num_files - 1)))
        ext = ".log.gz" if self.cfg.gzip else ".log"
        return f"access-{self.run_id}-{i:0{width}d}{ext}"

    def write_file(self, i: int, lo: int, hi: int, dest: Destination, prog: Progress) -> FileResult:
        cfg = self.cfg
        rng = random.Random(f"logberg/{self.run_id}/file/{i}")
        groups = sorted_times(rng, self.intensity, lo, hi, cfg.lines_per_file, CHUNK)
        bad = _Gaps(rng, cfg.malformed_rate)
        odd = _Gaps(rng, ODD_RATE)
        first_key, first_secs = next(groups)
        dt = _date_of(first_secs[0])
        rel = f"{RAW_PREFIX}/dt={dt}/{self.file_name(i)}"
        res = FileResult(i, rel, "", dt, iso(lo), iso(hi), iso(first_secs[0]), "")
        secs: list[int] = []
        cl: list[int] = []

        def flush() -> None:
            data = self.maker.render(rng, secs, cl, res.lines, bad, odd, res)
            writer.write(data)
            self.days.add(secs, cl)
            res.lines += len(secs)
            res.last_ts = iso(secs[-1])
            prog.add(len(secs), len(data))

        writer, tmp = dest.open(rel, cfg.gzip)
        try:
            for key, group in itertools.chain([(first_key, first_secs)], groups):
                secs += group
                cl += self.pool.draw(rng, key, len(group))
                if len(secs) >= CHUNK:
                    flush()
                    secs, cl = [], []
            if secs:
                flush()
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        res.uri = dest.commit(tmp, rel)
        res.malformed_total = sum(res.malformed.values())
        res.valid = res.lines - res.malformed_total
        res.odd_valid = sum(res.odd_valid_kinds.values())
        if self.maker.upstream is not None and res.timing is None:
            res.timing = self.maker.upstream.empty()
        res.bytes, res.uncompressed_bytes, res.sha256 = (
            written.bytes,
            written.uncompressed_bytes,
            written.sha256,
        )
        return res

    def run(self, dest: Destination, prog: Progress) -> dict[str, Any]:
        cfg = self.cfg
        files = [
            self.write_file(i, lo, hi, dest, prog)
            for i, (lo, hi) in enumerate(windows(cfg.start, cfg.end, cfg.num_files))
        ]
        manifest = self.manifest(files, dest.root_uri)
        rel = f"{RAW_PREFIX}/_manifests/{self.run_id}.json"
        manifest["manifest"] = {"path": rel, "uri": f"{dest.manifest_root}/{rel}"}
        dest.put_last(rel, (json.dumps(manifest, indent=1) + "\n").encode())
        return manifest

    def manifest(self, files: list[FileResult], root_uri: str) -> dict[str, Any]:
        cfg = self.cfg
        days, weeks, total = summaries(self.days, self.pool, cfg.start, cfg.end)
        malformed = {k: sum(f.malformed[k] for f in files) for k in MALFORMED_KINDS}
        return {
            "generator": "logberg-generator",
            "generator_version": __version__,
            "run_id": self.run_id,
            "seed": cfg.seed,
            "args": cfg.args(),
            "output": root_uri,
            "files": [asdict(f) for f in files],
            "days": days,
            "weeks": weeks,
            "totals": {
                "files": len(files),
                "lines": sum(f.lines for f in files),
                **total,
                "malformed": malformed,
                "malformed_total": sum(malformed.values()),
                "bytes": sum(f.bytes for f in files),
                "uncompressed_bytes": sum(f.uncompressed_bytes for f in files),
                **self.timing_totals(files),
            },
        }

    def timing_totals(self, files: list[FileResult]) -> dict[str, Any]:
        """ingress-nginx: the timing sums over every file (`Upstream`)."""
        if self.maker.upstream is None:
            return {}
        timing = self.maker.upstream.empty()
        for f in files:
            for k, v in (f.timing or {}).items():
                timing[k] += v
        return {"timing": timing}


def destination(out: Output, endpoint_url: str | None, cfg: Config | None = None) -> Destination:
    if out.path is not None:
        return LocalDestination(out.path)
    if out.kafka is not None:
        from generator.kafka_sink import KafkaDestination

        assert cfg is not None and cfg.manifest_to is not None  # Config checks it
        manifests = destination(cfg.manifest_to, endpoint_url)
        return KafkaDestination(out.kafka, cfg.message, cfg.partitions, manifests)
    return S3Destination(s3_client(endpoint_url), out.bucket, out.prefix)


def generate(cfg: Config, progress: Progress | None = None) -> dict[str, Any]:
    """Write all files of the run, then the manifest (only if every file made it)."""
    prog = progress or Progress(cfg.num_files * cfg.lines_per_file, enabled=False)
    gen = Generator(cfg)
    dest = destination(cfg.output, cfg.endpoint_url, cfg)
    ok = False
    try:
        manifest = gen.run(dest, prog)
        ok = True
    finally:
        dest.close(ok)
        prog.done()
    return manifest


def bench(lines: int, gzip: bool = False) -> float:
    """Lines per second for `lines` lines (in files of up to 500k) to a temporary dir."""
    per_file = min(lines, 500_000)
    n = max(1, lines // per_file)
    with tempfile.TemporaryDirectory(prefix="logberg-bench-") as tmp:
        cfg = Config(
            num_files=n,
            lines_per_file=per_file,
            start=date(2025, 1, 6),
            end=date(2025, 1, 12),
            app="nginx",
            output=Output(path=Path(tmp)),
            endpoint_url=None,
            seed=1,
            malformed_rate=0.001,
            gzip=gzip,
            fmt="combined",
            tz="+0000",
            clients=5000,
        )
        t0 = time.perf_counter()
        generate(cfg)
        return n * per_file / (time.perf_counter() - t0)
