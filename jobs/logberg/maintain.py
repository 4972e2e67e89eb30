"""`logberg maintain` and `logberg rollback`: Iceberg table maintenance and time travel.

`maintain` runs, for every Iceberg table in nginx_logs (or the ones named with --table):
compaction (rewrite_data_files, bounded per run), rewrite_manifests, expire_snapshots and,
only after expiry, remove_orphan_files. It prints a before/after report per table and
appends it to nginx_logs.maintenance_runs.

Safe next to a running ingest: ingest of new files only adds data files (its overwrite by
source_file matches no existing one), which never invalidates a rewrite; any commit
conflict (CommitFailedException / ValidationException) is retried a bounded number of
times. Rewrites are validated by Iceberg, and each rewrite snapshot is checked to have
added exactly as many records as it removed.

`rollback TABLE --to SNAPSHOT_ID | --to-timestamp TS` makes an earlier snapshot current.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyspark.sql import Row, SparkSession

from logberg import tables
from logberg.errors import ConfigError
from logberg.session import ensure_database
from logberg.tables import qualified

MAINTENANCE_RUNS = f"{tables.DATABASE}.maintenance_runs"
MIN_ORPHAN_MARGIN_DAYS = 3.0
MB = 1024 * 1024
TABLE_NAME = re.compile(r"^(?:nginx_logs\.)?([A-Za-z_][A-Za-z0-9_]*)$")
# Iceberg commit conflicts, as they surface through Py4J / Spark's error conversion.
CONFLICT_MARKERS = ("CommitFailedException", "ValidationException", "Cannot commit rewrite")

T = TypeVar("T")


# ---- configuration ---------------------------------------------------------------------


@dataclass(frozen=True)
class MaintainConfig:
    tables: tuple[str, ...] = ()  # nginx_logs.<name>; empty: every Iceberg table
    strategy: str = "binpack"
    target_file_size_mb: int = 128
    min_input_files: int = 5
    max_files_per_run: int = 5000
    max_file_group_mb: int = 1024
    retention_days: float = 7.0
    retain_last: int = 5
    orphan_margin_days: float = MIN_ORPHAN_MARGIN_DAYS
    max_retries: int = 3
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])


@dataclass(frozen=True)
class RollbackConfig:
    table: str  # nginx_logs.<name>
    snapshot_id: int | None = None
    timestamp: dt.datetime | None = None  # naive UTC


def table_name(value: str, setting: str) -> str:
    m = TABLE_NAME.match(value)
    if not m:
        raise ConfigError(f"{setting} {value!r}: expected a table name like access_logs")
    return f"{tables.DATABASE}.{m.group(1)}"


def parse_maintain_args(argv: Sequence[str]) -> MaintainConfig:
    p = argparse.ArgumentParser(prog="logberg maintain", description=__doc__.split("\n")[0])
    p.add_argument(
        "--table",
        action="append",
        default=[],
        help="only this table (repeatable; default: every Iceberg table in nginx_logs)",
    )
    p.add_argument("--strategy", choices=["binpack", "sort"], default="binpack")
    p.add_argument("--target-file-size-mb", type=int, default=128)
    p.add_argument(
        "--min-input-files",
        type=int,
        default=5,
        help="compact a partition only when it has at least this many small files",
    )
    p.add_argument(
        "--max-files-per-run",
        type=int,
        default=5000,
        help="bound on data files rewritten per table per run (fits a schedule)",
    )
    p.add_argument(
        "--max-file-group-mb",
        type=int,
        default=1024,
        help="input bytes per rewrite group; each group commits on its own",
    )
    p.add_argument("--retention-days", type=float, default=7.0)
    p.add_argument("--retain-last", type=int, default=5, help="snapshots always kept")
    p.add_argument(
        "--orphan-margin-days",
        type=float,
        default=MIN_ORPHAN_MARGIN_DAYS,
        help=f"only remove unreferenced files older than this (>= {MIN_ORPHAN_MARGIN_DAYS:g})",
    )
    p.add_argument("--max-retries", type=int, default=3, help="retries after a commit conflict")
    a = p.parse_args(list(argv))
    positive = {
        "--target-file-size-mb": a.target_file_size_mb,
        "--min-input-files": a.min_input_files,
        "--max-files-per-run": a.max_files_per_run,
        "--max-file-group-mb": a.max_file_group_mb,
        "--retain-last": a.retain_last,
    }
    for name, value in positive.items():
        if value < 1:
            raise ConfigError(f"{name} {value}: must be at least 1")
    if a.retention_days < 0:
        raise ConfigError(f"--retention-days {a.retention_days:g}: must not be negative")
    if a.orphan_margin_days < MIN_ORPHAN_MARGIN_DAYS:
        raise ConfigError(
            f"--orphan-margin-days {a.orphan_margin_days:g}: must be at least "
            f"{MIN_ORPHAN_MARGIN_DAYS:g} (files of in-flight commits would be deleted)"
        )
    if a.max_retries < 0:
        raise ConfigError(f"--max-retries {a.max_retries}: must not be negative")
    return MaintainConfig(
        tables=tuple(table_name(t, "--table") for t in a.table),
        strategy=a.strategy,
        target_file_size_mb=a.target_file_size_mb,
        min_input_files=a.min_input_files,
        max_files_per_run=a.max_files_per_run,
        max_file_group_mb=a.max_file_group_mb,
        retention_days=a.retention_days,
        retain_last=a.retain_last,
        orphan_margin_days=a.orphan_margin_days,
        max_retries=a.max_retries,
    )


def parse_timestamp(value: str) -> dt.datetime:
    """ISO timestamp -> naive UTC (the session time zone); naive input is taken as UTC."""
    try:
        ts = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"--to-timestamp {value!r}: expected an ISO timestamp") from None
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def parse_rollback_args(argv: Sequence[str]) -> RollbackConfig:
    p = argparse.ArgumentParser(
        prog="logberg rollback", description="make an earlier snapshot of a table current"
    )
    p.add_argument("table", help="e.g. access_logs or nginx_logs.access_logs")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--to", type=int, metavar="SNAPSHOT_ID", help="rollback_to_snapshot")
    g.add_argument("--to-timestamp", metavar="TS", help="rollback_to_timestamp (ISO, UTC)")
    a = p.parse_args(list(argv))
    return RollbackConfig(
        table=table_name(a.table, "TABLE"),
        snapshot_id=a.to,
        timestamp=parse_timestamp(a.to_timestamp) if a.to_timestamp else None,
    )


# ---- pure helpers ----------------------------------------------------------------------


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_timestamp(ts: dt.datetime) -> str:
    """A literal in the session time zone (UTC); aware values are converted first."""
    if ts.tzinfo:
        ts = ts.astimezone(dt.timezone.utc)
    return f"TIMESTAMP '{ts.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def sql_map(options: dict[str, str]) -> str:
    return "map(" + ", ".join(f"{sql_str(k)}, {sql_str(v)}" for k, v in options.items()) + ")"


def rewrite_options(cfg: MaintainConfig) -> dict[str, str]:
    return {
        "target-file-size-bytes": str(cfg.target_file_size_mb * MB),
        "min-input-files": str(cfg.min_input_files),
        "max-files-to-rewrite": str(cfg.max_files_per_run),
        "max-file-group-size-bytes": str(cfg.max_file_group_mb * MB),
        # Groups commit independently: a conflict with ingest loses one group, not the run.
        "partial-progress.enabled": "true",
        "partial-progress.max-commits": "10",
    }


def is_conflict(error: BaseException) -> bool:
    text = str(error)
    return any(marker in text for marker in CONFLICT_MARKERS)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _num(row: Row | None, key: str) -> int:
    if row is None:
        return 0
    value = row.asDict().get(key)
    return int(value) if value is not None else 0


# ---- IO ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableStats:
    data_files: int
    avg_file_bytes: float
    records: int
    snapshots: int


NO_STATS = TableStats(0, 0.0, 0, 0)


@dataclass
class TableReport:
    table: str
    before: TableStats = NO_STATS
    after: TableStats | None = None
    rewritten_files: int = 0
    added_files: int = 0
    rewritten_bytes: int = 0
    failed_files: int = 0
    manifests_rewritten: int = 0
    expired_data_files: int = 0
    orphans_removed: int = 0
    retries: int = 0
    status: str = "ok"
    error: str | None = None

    def line(self) -> str:
        after = self.after or self.before

        def kib(b: float) -> str:
            return f"{b / 1024:.1f} KiB"

        return (
            f"{self.table}: data files {self.before.data_files} -> {after.data_files}, "
            f"avg file {kib(self.before.avg_file_bytes)} -> {kib(after.avg_file_bytes)}, "
            f"snapshots {self.before.snapshots} -> {after.snapshots}, "
            f"rewritten {self.rewritten_files} -> {self.added_files} files, "
            f"expired data files {self.expired_data_files}, "
            f"orphans removed {self.orphans_removed}, retries {self.retries}: {self.status}"
            + (f" ({self.error})" if self.error else "")
        )


def table_stats(spark: SparkSession, table: str) -> TableStats:
    files = spark.sql(
        f"SELECT COUNT(*) AS n, COALESCE(AVG(file_size_in_bytes), 0D) AS avg_bytes, "
        f"COALESCE(SUM(record_count), 0L) AS records FROM {table}.data_files"
    ).collect()[0]
    snapshots = spark.sql(f"SELECT COUNT(*) FROM {table}.snapshots").collect()[0][0]
    return TableStats(int(files.n), float(files.avg_bytes), int(files.records), int(snapshots))


def is_iceberg(spark: SparkSession, table: str) -> bool:
    from pyspark.errors import AnalysisException

    try:
        spark.sql(f"SELECT snapshot_id FROM {table}.snapshots LIMIT 0").collect()
    except AnalysisException:
        return False
    return True


def list_tables(spark: SparkSession) -> list[str]:
    """Every Iceberg table in nginx_logs (temporary views and other formats skipped)."""
    rows = spark.sql(f"SHOW TABLES IN {tables.DATABASE}").collect()
    names = sorted(f"{tables.DATABASE}.{r.tableName}" for r in rows if not r.isTemporary)
    return [t for t in names if is_iceberg(spark, t)]


def has_sort_order(spark: SparkSession, table: str) -> bool:
    rows = spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
    return any(r.key == "sort-order" and r.value not in ("", "[]") for r in rows)


def with_retries(step: Callable[[], T], attempts: int, on_retry: Callable[[], None]) -> T:
    """Run `step`, retrying Iceberg commit conflicts up to `attempts` more times."""
    for attempt in range(attempts + 1):
        try:
            return step()
        except Exception as e:
            if attempt == attempts or not is_conflict(e):
                raise
            on_retry()
            time.sleep(min(2**attempt, 30))
    raise AssertionError("unreachable")


def call(spark: SparkSession, procedure: str, args: dict[str, str]) -> list[Row]:
    """CALL <current catalog>.system.<procedure>(name => value, ...); values are SQL."""
    catalog = spark.catalog.currentCatalog()
    named = ", ".join(f"{k} => {v}" for k, v in args.items())
    return spark.sql(f"CALL {catalog}.system.{procedure}({named})").collect()


def check_rewrites(spark: SparkSession, table: str, since: dt.datetime) -> None:
    """Every rewrite (operation 'replace') committed since `since` kept the record count."""
    rows = spark.sql(
        f"SELECT snapshot_id, summary['added-records'] AS added, "
        f"summary['deleted-records'] AS deleted FROM {table}.snapshots "
        f"WHERE operation = 'replace' AND committed_at >= {sql_timestamp(since)}"
    ).collect()
    for r in rows:
        if (r.added or "0") != (r.deleted or "0"):
            raise RuntimeError(
                f"{table}: rewrite snapshot {r.snapshot_id} added {r.added} records "
                f"but removed {r.deleted}"
            )


def maintain_table(spark: SparkSession, cfg: MaintainConfig, report: TableReport) -> None:
    """Fill `report` as the steps run, so a failure still reports what was done."""
    table = report.table
    report.before = table_stats(spark, table)

    def retried() -> None:
        report.retries += 1

    started = utc_now() - dt.timedelta(seconds=1)
    strategy = cfg.strategy
    # access_logs has no table sort order (ingest writes unsorted, in time order per file):
    # a sort rewrite orders it by tables.ACCESS_SORT.
    sort_order = tables.ACCESS_SORT if table == tables.ACCESS_LOGS else None
    if strategy == "sort" and sort_order is None and not has_sort_order(spark, table):
        strategy = "binpack"  # no table sort order to sort by
    rewrite_args = {
        "table": sql_str(table),
        "strategy": sql_str(strategy),
        "options": sql_map(rewrite_options(cfg)),
    }
    if strategy == "sort" and sort_order is not None:
        rewrite_args["sort_order"] = sql_str(sort_order)
    rewrite = with_retries(
        lambda: call(spark, "rewrite_data_files", rewrite_args), cfg.max_retries, retried
    )
    first = rewrite[0] if rewrite else None
    report.rewritten_files = _num(first, "rewritten_data_files_count")
    report.added_files = _num(first, "added_data_files_count")
    report.rewritten_bytes = _num(first, "rewritten_bytes_count")
    report.failed_files = _num(first, "failed_data_files_count")
    check_rewrites(spark, table, started)

    manifests = with_retries(
        lambda: call(spark, "rewrite_manifests", {"table": sql_str(table)}),
        cfg.max_retries,
        retried,
    )
    report.manifests_rewritten = _num(
        manifests[0] if manifests else None, "rewritten_manifests_count"
    )

    expire_before = utc_now() - dt.timedelta(days=cfg.retention_days)
    expired = with_retries(
        lambda: call(
            spark,
            "expire_snapshots",
            {
                "table": sql_str(table),
                "older_than": sql_timestamp(expire_before),
                "retain_last": str(cfg.retain_last),
            },
        ),
        cfg.max_retries,
        retried,
    )
    report.expired_data_files = _num(expired[0] if expired else None, "deleted_data_files_count")

    # After expiry, so files of just-expired snapshots are deleted by expiry, not here; the
    # margin keeps files of commits still in flight.
    orphans_before = utc_now() - dt.timedelta(days=cfg.orphan_margin_days)
    orphans = call(
        spark,
        "remove_orphan_files",
        {"table": sql_str(table), "older_than": sql_timestamp(orphans_before)},
    )
    report.orphans_removed = len(orphans)
    report.after = table_stats(spark, table)


def create_runs_table(spark: SparkSession) -> None:
    spark.sql(
        f"""CREATE TABLE IF NOT EXISTS {MAINTENANCE_RUNS} (
            run_id STRING NOT NULL, table_name STRING, started_at TIMESTAMP,
            finished_at TIMESTAMP, strategy STRING,
            data_files_before BIGINT, data_files_after BIGINT,
            avg_file_bytes_before DOUBLE, avg_file_bytes_after DOUBLE,
            records_before BIGINT, records_after BIGINT,
            snapshots_before BIGINT, snapshots_after BIGINT,
            rewritten_files BIGINT, added_files BIGINT, rewritten_bytes BIGINT,
            failed_files BIGINT, manifests_rewritten BIGINT, expired_data_files BIGINT,
            orphans_removed BIGINT, retries INT, status STRING, error STRING)
        USING iceberg TBLPROPERTIES ({tables._props({"write.distribution-mode": "none"})})"""
    )


RUNS_SCHEMA = (
    "run_id STRING, table_name STRING, started_at TIMESTAMP, finished_at TIMESTAMP, "
    "strategy STRING, data_files_before BIGINT, data_files_after BIGINT, "
    "avg_file_bytes_before DOUBLE, avg_file_bytes_after DOUBLE, records_before BIGINT, "
    "records_after BIGINT, snapshots_before BIGINT, snapshots_after BIGINT, "
    "rewritten_files BIGINT, added_files BIGINT, rewritten_bytes BIGINT, failed_files BIGINT, "
    "manifests_rewritten BIGINT, expired_data_files BIGINT, orphans_removed BIGINT, "
    "retries INT, status STRING, error STRING"
)


def record(
    spark: SparkSession, cfg: MaintainConfig, report: TableReport, started: dt.datetime
) -> None:
    after = report.after or report.before
    row: tuple[Any, ...] = (
        cfg.run_id,
        report.table,
        started,
        utc_now(),
        cfg.strategy,
        report.before.data_files,
        after.data_files,
        report.before.avg_file_bytes,
        after.avg_file_bytes,
        report.before.records,
        after.records,
        report.before.snapshots,
        after.snapshots,
        report.rewritten_files,
        report.added_files,
        report.rewritten_bytes,
        report.failed_files,
        report.manifests_rewritten,
        report.expired_data_files,
        report.orphans_removed,
        report.retries,
        report.status,
        report.error,
    )
    spark.createDataFrame([row], RUNS_SCHEMA).writeTo(qualified(spark, MAINTENANCE_RUNS)).append()


def maintain(spark: SparkSession, cfg: MaintainConfig) -> list[TableReport]:
    """Maintain each table; a failing table is reported and the others still run."""
    ensure_database(spark)
    create_runs_table(spark)
    targets = list(cfg.tables) or list_tables(spark)
    for t in targets:
        if not is_iceberg(spark, t):
            raise ConfigError(f"--table {t}: no such Iceberg table")
    reports = []
    for t in targets:
        started = utc_now()
        report = TableReport(table=t)
        try:
            maintain_table(spark, cfg, report)
        except Exception as e:
            report.status = "failed"
            report.error = (str(e).strip().splitlines() or [repr(e)])[0][:500]
        print(report.line(), flush=True)
        record(spark, cfg, report, started)
        reports.append(report)
    return reports


# ---- rollback ----------------------------------------------------------------------------


def rollback(spark: SparkSession, cfg: RollbackConfig) -> tuple[int | None, int]:
    """(previous, new) current snapshot id; unknown table or snapshot -> ConfigError."""
    if not is_iceberg(spark, cfg.table):
        raise ConfigError(f"TABLE {cfg.table}: no such Iceberg table")
    ancestors = {
        int(r.snapshot_id)
        for r in spark.sql(
            f"SELECT snapshot_id FROM {cfg.table}.history WHERE is_current_ancestor"
        ).collect()
    }
    if cfg.snapshot_id is not None:
        known = spark.sql(
            f"SELECT 1 FROM {cfg.table}.snapshots WHERE snapshot_id = {cfg.snapshot_id}"
        ).count()
        if not known:
            raise ConfigError(f"--to {cfg.snapshot_id}: no such snapshot of {cfg.table}")
        if cfg.snapshot_id not in ancestors:
            raise ConfigError(
                f"--to {cfg.snapshot_id}: not an ancestor of the current state of {cfg.table}"
            )
        procedure = "rollback_to_snapshot"
        arg = {"snapshot_id": str(cfg.snapshot_id)}
    else:
        assert cfg.timestamp is not None
        ts = sql_timestamp(cfg.timestamp)
        older = {
            int(r.snapshot_id)
            for r in spark.sql(
                f"SELECT snapshot_id FROM {cfg.table}.snapshots WHERE committed_at <= {ts}"
            ).collect()
        }
        if not older & ancestors:
            raise ConfigError(
                f"--to-timestamp {cfg.timestamp.isoformat()}: {cfg.table} has no snapshot that old"
            )
        procedure = "rollback_to_timestamp"
        arg = {"timestamp": ts}
    rows = call(spark, procedure, {"table": sql_str(cfg.table), **arg})
    prev = rows[0].previous_snapshot_id
    return (int(prev) if prev is not None else None), int(rows[0].current_snapshot_id)


# ---- entry point -------------------------------------------------------------------------


def main(argv: Sequence[str]) -> int:
    """`maintain [options]`, or `rollback TABLE ...` (argv[0] is then "rollback")."""
    from logberg.session import build_session

    args = list(argv)
    if args and args[0] == "rollback":
        rcfg = parse_rollback_args(args[1:])
        spark = build_session("logberg-rollback")
        prev, cur = rollback(spark, rcfg)
        print(f"{rcfg.table}: previous snapshot {prev}, current snapshot {cur}")
        return 0
    cfg = parse_maintain_args(args)
    spark = build_session("logberg-maintain")
    reports = maintain(spark, cfg)
    return 0 if all(r.status == "ok" for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
