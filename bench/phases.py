"""Where the time goes in `logberg ingest`: its pieces, timed one by one in one session.

    .venv/bin/python -m bench.phases [DATASET] [VARIANT ...]

DATASET is a cached dataset name (default lines_5m; run `make bench` or BENCH_SKIP=... first
so it exists). Not part of `make bench`. Each variant runs on an empty warehouse:

  as_is         the steps of ingest.ingest_batch, unchanged, each timed
  no_verify     the same without the post-commit COUNT (`--no-verify`)
  no_persist    the same with the parse not persisted (every action re-parses)
  one_agg       per-file counts and the batch's dates from ONE aggregation (no separate
                DISTINCT date job)
  append        access rows appended instead of MERGEd (not exact on re-runs: for scale only)
  shuffle2      spark.sql.shuffle.partitions=2 (one per core) instead of 4

The code here re-states ingest_batch's steps so they can be timed; it does not change jobs/.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import config
from bench.lakehouse import Lakehouse

VARIANTS = ("as_is", "no_verify", "no_persist", "one_agg", "append", "shuffle2")


class Timer:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = round(self.phases.get(name, 0) + time.perf_counter() - t0, 3)


def ingest_timed(spark: Any, uri: str, variant: str) -> dict[str, float]:
    import datetime as dt

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from logberg import ingest as ig
    from logberg import tables
    from logberg.parse import parse_lines
    from logberg.tables import qualified

    t = Timer()
    cfg = ig.IngestConfig(inputs=[uri], verify=variant != "no_verify")
    t0 = time.perf_counter()
    with t("create_tables"):
        tables.create_ingest_tables(spark)
    with t("list_inputs"):
        files = ig.list_inputs(spark, cfg)
    with t("ledger_state"):
        todo, _ = ig.plan(files, ig.ledger_state(spark), False)
    spark.conf.set("spark.sql.files.maxPartitionBytes", ig.ONE_FILE_PER_SPLIT)
    spark.conf.set("spark.sql.files.openCostInBytes", ig.ONE_FILE_PER_SPLIT)
    now = F.current_timestamp()
    total_acc = 0
    for batch in ig.batches(todo, cfg.max_bytes_per_commit):
        uris = [f.uri for f in batch]
        lines = ig.read_lines(spark, batch)
        parsed = parse_lines(lines)
        if variant != "no_persist":
            parsed = parsed.persist(StorageLevel.MEMORY_AND_DISK)
        with t("parse_and_per_file_counts"):
            if variant == "one_agg":
                rows = (
                    parsed.groupBy("source_file")
                    .agg(
                        F.count("*").alias("lines"),
                        F.count("reject_reason").alias("rejected"),
                        F.collect_set(
                            F.when(F.col("reject_reason").isNull(), F.to_date("timestamp"))
                        ).alias("dates"),
                    )
                    .collect()
                )
                per_file = {r.source_file: (int(r.lines), int(r.rejected)) for r in rows}
                dates = {d for r in rows for d in r.dates}
            else:
                per_file = {
                    r.source_file: (int(r.lines), int(r.rejected))
                    for r in parsed.groupBy("source_file")
                    .agg(F.count("*").alias("lines"), F.count("reject_reason").alias("rejected"))
                    .collect()
                }
        accepted = sum(n - r for n, r in per_file.values())
        rejected = sum(r for _, r in per_file.values())
        total_acc += accepted
        access = ig.to_access_rows(parsed, now)
        if variant != "one_agg":
            with t("distinct_dates"):
                dates = {r.date for r in access.select("date").distinct().collect()}
        with t("merge_access"):
            if variant == "append":
                access.writeTo(qualified(spark, tables.ACCESS_LOGS)).append()
            else:
                access.createOrReplaceTempView("logberg_ingest_batch")
                dl = ig._sql_list([d.isoformat() for d in sorted(dates)])
                spark.sql(
                    f"""MERGE INTO {tables.ACCESS_LOGS} t USING logberg_ingest_batch s
                    ON t.date IN ({dl}) AND t.date = s.date AND t.event_id = s.event_id
                    WHEN NOT MATCHED THEN INSERT *"""
                )
        with t("latest_snapshot"):
            ig.latest_snapshot(spark, tables.ACCESS_LOGS)
        with t("merge_rejects"):
            if rejected:
                ig.to_rejects(parsed, cfg.run_id, now).createOrReplaceTempView(
                    "logberg_ingest_rejects"
                )
                spark.sql(
                    f"""MERGE INTO {tables.REJECTS} t USING logberg_ingest_rejects s
                    ON t.source_file = s.source_file AND t.line_number = s.line_number
                    WHEN NOT MATCHED THEN INSERT *"""
                )
        if variant != "no_persist":
            parsed.unpersist()
        if cfg.verify:
            with t("verify_count"):
                stored = spark.sql(
                    f"SELECT COUNT(*) FROM {tables.ACCESS_LOGS} WHERE date IN "
                    f"({ig._sql_list([d.isoformat() for d in sorted(dates)])}) "
                    f"AND source_file IN ({ig._sql_list(uris)})"
                ).collect()[0][0]
            assert stored == accepted, (stored, accepted)
        with t("ledger_append"):
            spark.createDataFrame(
                [
                    (f.uri, f.size, f.modified, cfg.run_id, n, n - rej, rej)
                    for f in batch
                    for (n, rej) in [per_file.get(f.uri, (0, 0))]
                ],
                "path STRING, size BIGINT, modification_time TIMESTAMP, run_id STRING, "
                "lines BIGINT, accepted BIGINT, rejected BIGINT",
            ).withColumn("ingested_at", F.current_timestamp()).writeTo(
                qualified(spark, tables.LEDGER)
            ).append()
    with t("runs_append"):
        spark.createDataFrame(
            [
                (
                    cfg.run_id,
                    dt.datetime.now(dt.timezone.utc),
                    dt.datetime.now(dt.timezone.utc),
                    len(todo),
                    0,
                    total_acc,
                    0,
                    0,
                    0.0,
                    None,
                    [],
                    "bench",
                )
            ],
            tables.INGEST_RUNS_SCHEMA,
        ).writeTo(qualified(spark, tables.INGEST_RUNS)).append()
    t.phases["total_in_session"] = round(time.perf_counter() - t0, 3)
    t.phases["accepted"] = total_acc
    return t.phases


def main(argv: list[str]) -> int:
    from bench import datasets
    from bench.run import specs

    name = argv[0] if argv and argv[0] not in VARIANTS else "lines_5m"
    variants = [a for a in argv if a in VARIANTS] or list(VARIANTS)
    spec = specs()[name]
    ds = datasets.ensure(spec, config.DATA / "datasets" / config.SCALE)
    lh = Lakehouse(config.DATA / "home-phases")
    lh.up()
    out: dict[str, Any] = {"dataset": name, "lines": ds.lines}
    try:
        t0 = time.perf_counter()
        spark = lh.spark
        out["session_start_s"] = round(time.perf_counter() - t0, 3)
        default_shuffle = spark.conf.get("spark.sql.shuffle.partitions")
        for v in variants:
            lh.reset()
            spark.conf.set(
                "spark.sql.shuffle.partitions", "2" if v == "shuffle2" else default_shuffle
            )
            ph = ingest_timed(spark, ds.uri, v)
            if ph["accepted"] != ds.valid:
                raise RuntimeError(f"{v}: accepted {ph['accepted']} != manifest {ds.valid}")
            out[v] = ph
            print(json.dumps({v: ph}), flush=True)
        lh.reset()
    finally:
        lh.down()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
