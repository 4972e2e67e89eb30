"""`logberg generate` / `python -m generator`: parse and check the flags, then generate.

Bad arguments (and an unreachable S3 endpoint or missing bucket) print one line,
`generate: error: ...`, exit with 2 and write nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from generator import __version__
from generator.config import (
    APPS,
    FORMATS,
    Config,
    UsageError,
    check_writable,
    default_manifest_to,
    parse_date,
    parse_output,
)

PROG = "generate"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Generate realistic nginx access logs (plus a ground-truth manifest) under "
        "<output>/raw/nginx/dt=YYYY-MM-DD/.",
    )
    add = p.add_argument
    add("--num-files", type=int, default=1, metavar="N", help="files to write (default 1)")
    add("--lines-per-file", type=int, default=10_000, metavar="N", help="default 10000")
    add("--start-date", default="2025-01-01", metavar="YYYY-MM-DD", help="UTC; default 2025-01-01")
    add("--end-date", metavar="YYYY-MM-DD", help="inclusive; default: the start date")
    add("--app", default="nginx", help=f"log source: {', '.join(APPS)}")
    add(
        "--output",
        metavar="URI",
        help="file:///abs/dir, s3://bucket/prefix, or kafka://HOST:PORT/TOPIC (each line a "
        "message; no HOST:PORT: LOGBERG_KAFKA_BOOTSTRAP)",
    )
    add("--bucket", help="shorthand for --output s3://BUCKET")
    add("--endpoint-url", metavar="URL", help="S3-compatible endpoint, e.g. http://127.0.0.1:9878")
    add("--seed", type=int, metavar="INT", help="random seed (default: random, see manifest)")
    add("--malformed-rate", type=float, default=0.0, metavar="P", help="0..1 (default 0)")
    add("--gzip", action=argparse.BooleanOptionalAction, default=True, help="gzip (default)")
    add("--format", default="combined", help=f"{' or '.join(FORMATS)} (default combined)")
    add("--tz", default="+0000", metavar="+HHMM", help="offset in $time_local (default +0000)")
    add("--clients", type=int, default=5000, metavar="N", help="distinct clients (default 5000)")
    add(
        "--message",
        default="raw",
        choices=("raw", "json"),
        help="kafka://: the line as the value (raw, default), or Fluent Bit's JSON envelope "
        "({log, host, file, offset}: the offset is the line's number in its file)",
    )
    add("--partitions", type=int, default=4, metavar="N", help="kafka://: a new topic's (4)")
    add(
        "--manifest-to",
        metavar="URI",
        help="kafka://: where the manifest goes (file:///abs/dir or s3://bucket/prefix; "
        "default: $LOGBERG_HOME/kafka-manifests/TOPIC, LOGBERG_HOME's default being .logberg "
        "in the checkout; in a cluster it must be given)",
    )
    add("--quiet", action="store_true", help="no progress bar or summary")
    add("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def parse_config(argv: Sequence[str]) -> Config:
    a = build_parser().parse_args(list(argv))
    start = parse_date("--start-date", a.start_date)
    end = parse_date("--end-date", a.end_date) if a.end_date else start
    output = parse_output(a.output, a.bucket)
    manifest_to = parse_output(a.manifest_to, None) if a.manifest_to else None
    if manifest_to is None and output.kafka is not None:
        manifest_to = default_manifest_to(output.kafka)
    return Config(
        num_files=a.num_files,
        lines_per_file=a.lines_per_file,
        start=start,
        end=end,
        app=a.app,
        output=output,
        endpoint_url=a.endpoint_url,
        seed=a.seed if a.seed is not None else secrets.randbelow(1 << 32),
        malformed_rate=a.malformed_rate,
        gzip=a.gzip,
        fmt=a.format,
        tz=a.tz,
        clients=a.clients,
        quiet=a.quiet,
        message=a.message,
        partitions=a.partitions,
        manifest_to=manifest_to,
    )


def _preflight(cfg: Config) -> None:
    """Fail before writing anything if the destination cannot take the files."""
    for out in (cfg.output, cfg.manifest_to):
        if out is None:
            continue
        if out.path is not None:
            check_writable(out.path)
            continue
        if out.kafka is not None:
            from generator.kafka_sink import check_brokers

            problem = check_brokers(out.kafka)
        else:
            from generator.sinks import check_bucket

            problem = check_bucket(cfg.endpoint_url, out.bucket)
        if problem:
            raise UsageError(problem)


def with_client(cfg: Config, client: Callable[[str], Mapping[str, Any]] | None) -> Config:
    """A Kafka output's client options (`client(bootstrap)`), when given."""
    t = cfg.output.kafka
    if client is None or t is None:
        return cfg
    target = dataclasses.replace(t, client=dict(client(t.bootstrap)))
    return dataclasses.replace(cfg, output=dataclasses.replace(cfg.output, kafka=target))


def main(
    argv: Sequence[str] | None = None,
    client: Callable[[str], Mapping[str, Any]] | None = None,
) -> int:
    """`client`: the Kafka clients' own options for the brokers, in librdkafka's names
    (`logberg generate`: LOGBERG_KAFKA_OPTIONS_FILE and LOGBERG_KAFKA_OPTIONS)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = with_client(parse_config(argv), client)
        _preflight(cfg)
    except UsageError as e:
        print(f"{PROG}: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help / --version
        return int(e.code or 0)

    from generator.engine import generate
    from generator.progress import Progress
    from generator.sinks import one_line

    total = cfg.num_files * cfg.lines_per_file
    progress = Progress(total, enabled=not cfg.quiet and sys.stderr.isatty())
    try:
        manifest = generate(cfg, progress)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; no manifest written", file=sys.stderr)
        return 130
    except Exception as e:
        print(f"{PROG}: error: {one_line(e)} (no manifest written)", file=sys.stderr)
        return 1
    if not cfg.quiet:
        t = manifest["totals"]
        print(
            f"wrote {t['files']} file(s), {t['lines']:,} lines ({t['malformed_total']:,}"
            f" malformed) to {manifest['output']}; manifest {manifest['manifest']['uri']}"
        )
    return 0
