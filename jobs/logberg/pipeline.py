"""`logberg run`: ingest, then analytics for what it touched, in one Spark session."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from logberg import analytics, ingest


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="logberg run", description="ingest + analytics")
    p.add_argument("--top-n", type=int, default=10)
    p.add_argument("--exclude-bots", action="store_true")
    known, rest = p.parse_known_args(list(argv))
    ingest_cfg = ingest.parse_args(rest)
    a_args = ["--top-n", str(known.top_n)] + (["--exclude-bots"] if known.exclude_bots else [])
    analytics_cfg = analytics.parse_args(a_args)
    from logberg.session import build_session

    spark = build_session("logberg-run")
    ingest.ingest(spark, ingest_cfg)
    analytics.analytics(spark, analytics_cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
