"""`logberg maintain`: Iceberg table maintenance for every table in nginx_logs.

For every Iceberg table in nginx_logs (or the ones named with --table): compaction
(rewrite_data_files, bounded per run), rewrite_manifests, expire_snapshots and, only after
expiry, remove_orphan_files. Each table gets a before/after report, also appended to
nginx_logs.maintenance_runs.

Safe next to a running ingest: ingest of new files only adds data files (its overwrite by
source_file matches no existing one), which never invalidates a rewrite; any commit
conflict (CommitFailedException / ValidationException) is retried a bounded number of
times. Rewrites are validated by Iceberg, and each rewrite snapshot is checked to have
added exactly as many records as it removed. rewrite_manifests, only an optimisation of
planning, is left to the next run when its retries all lose to other writers' commits
(the report says so); any other error of a step fails the table.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Row, SparkSession

from logberg.errors import ConfigError
from logberg.lakehouse import sql, tables
from logberg.lakehouse.commit_retry import CommitRetry, is_commit_conflict
from logberg.lakehouse.connect import query
from logberg.lakehouse.rows import rows_frame
from logberg.lakehouse.schema import ACCESS_LOGS, ACCESS_SORT, DATABASE, MAINTENANCE_RUNS
from logberg.lakehouse.tables import qualified

log = logging.getLogger(__name__)
MIN_ORPHAN_MARGIN_DAYS = 3.0
MB = 1024 * 1024
TABLE_NAME = re.compile(r"^(?:nginx_logs\.)?([A-Za-z_][A-Za-z0-9_]*)$")


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

    def __post_init__(self) -> None:
        if self.strategy not in ("binpack", "sort"):
            raise ConfigError(f"--strategy {self.strategy!r}: expected binpack or sort")
        positive = {
            "--target-file-size-mb": self.target_file_size_mb,
            "--min-input-files": self.min_input_files,
            "--max-files-per-run": self.max_files_per_run,
            "--max-file-group-mb": self.max_file_group_mb,
            "--retain-last": self.retain_last,
        }
        for name, value in positive.items():
            if value < 1:
                raise ConfigError(f"{name} {value}: must be at least 1")
        if self.retention_days < 0:
            raise ConfigError(f"--retention-days {self.retention_days:g}: must not be negative")
        if self.orphan_margin_days < MIN_ORPHAN_MARGIN_DAYS:
            raise ConfigError(
                f"--orphan-margin-days {self.orphan_margin_days:g}: must be at least "
                f"{MIN_ORPHAN_MARGIN_DAYS:g} (files of in-flight commits would be deleted)"
            )
        if self.max_retries < 0:
            raise ConfigError(f"--max-retries {self.max_retries}: must not be negative")


def table_name(value: str, setting: str) -> str:
    """`access_logs` or `nginx_logs.access_logs` -> `nginx_logs.access_logs`."""
    m = TABLE_NAME.match(value)
    if not m:
        raise ConfigError(f"{setting} {value!r}: expected a table name like access_logs")
    return f"{DATABASE}.{m.group(1)}"


# ---- pure helpers ----------------------------------------------------------------------


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
    manifests_deferred: bool = False  # rewrite_manifests lost to concurrent commits
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
            f"orphans removed {self.orphans_removed}, retries {self.retries}"
            + (
                ", manifests left to the next run (concurrent commits)"
                if self.manifests_deferred
                else ""
            )
            + f": {self.status}"
            + (f" ({self.error})" if self.error else "")
        )


def table_stats(spark: SparkSession, table: str) -> TableStats:
    files = query(
        spark,
        f"SELECT COUNT(*) AS n, COALESCE(AVG(file_size_in_bytes), 0D) AS avg_bytes, "
        f"COALESCE(SUM(record_count), 0L) AS records FROM {table}.data_files",
    ).collect()[0]
    snapshots = query(spark, f"SELECT COUNT(*) FROM {table}.snapshots").collect()[0][0]
    return TableStats(int(files.n), float(files.avg_bytes), int(files.records), int(snapshots))


def is_iceberg(spark: SparkSession, table: str) -> bool:
    from pyspark.errors import AnalysisException

    try:
        query(spark, f"SELECT snapshot_id FROM {table}.snapshots LIMIT 0").collect()
    except AnalysisException:
        return False
    return True


def list_tables(spark: SparkSession) -> list[str]:
    """Every Iceberg table in nginx_logs (temporary views and other formats skipped)."""
    names = sorted(f"{DATABASE}.{t}" for t in tables.existing(spark))
    return [t for t in names if is_iceberg(spark, t)]


def has_sort_order(spark: SparkSession, table: str) -> bool:
    rows = spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
    return any(r.key == "sort-order" and r.value not in ("", "[]") for r in rows)


def call(spark: SparkSession, procedure: str, args: dict[str, str]) -> list[Row]:
    """CALL <current catalog>.system.<procedure>(name => value, ...); values are SQL."""
    catalog = spark.catalog.currentCatalog()
    named = ", ".join(f"{k} => {v}" for k, v in args.items())
    return spark.sql(f"CALL {catalog}.system.{procedure}({named})").collect()


def check_rewrites(spark: SparkSession, table: str, since: dt.datetime) -> None:
    """Every rewrite (operation 'replace') committed since `since` kept the record count."""
    rows = query(
        spark,
        f"SELECT snapshot_id, summary['added-records'] AS added, "
        f"summary['deleted-records'] AS deleted FROM {table}.snapshots "
        f"WHERE operation = 'replace' AND committed_at >= {sql.timestamp_literal(since)}",
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
    # a sort rewrite orders it by ACCESS_SORT.
    sort_order = ACCESS_SORT if table == ACCESS_LOGS.qualified else None
    if strategy == "sort" and sort_order is None and not has_sort_order(spark, table):
        strategy = "binpack"  # no table sort order to sort by
    rewrite_args = {
        "table": sql.literal(table),
        "strategy": sql.literal(strategy),
        "options": sql.map_literal(rewrite_options(cfg)),
    }
    if strategy == "sort" and sort_order is not None:
        rewrite_args["sort_order"] = sql.literal(sort_order)
    retry = CommitRetry(retries=cfg.max_retries)
    rewrite = retry.run(
        lambda: call(spark, "rewrite_data_files", rewrite_args),
        f"rewrite_data_files of {table}",
        retried,
    )
    first = rewrite[0] if rewrite else None
    report.rewritten_files = _num(first, "rewritten_data_files_count")
    report.added_files = _num(first, "added_data_files_count")
    report.rewritten_bytes = _num(first, "rewritten_bytes_count")
    report.failed_files = _num(first, "failed_data_files_count")
    check_rewrites(spark, table, started)

    # Rewriting manifests only makes planning faster. Writers beside it (a stream's commits,
    # one per batch) may keep replacing the manifests it would rewrite: after its retries
    # it is left to the next run, said in the report, rather than failing the run and the
    # steps after it (66b55f9's and 28c0839's cold runs: four tries, each beaten).
    try:
        manifests = retry.run(
            lambda: call(spark, "rewrite_manifests", {"table": sql.literal(table)}),
            f"rewrite_manifests of {table}",
            retried,
        )
    except Exception as e:
        if not is_commit_conflict(e):
            raise
        manifests = []
        report.manifests_deferred = True
    report.manifests_rewritten = _num(
        manifests[0] if manifests else None, "rewritten_manifests_count"
    )

    expire_before = utc_now() - dt.timedelta(days=cfg.retention_days)
    expired = retry.run(
        lambda: call(
            spark,
            "expire_snapshots",
            {
                "table": sql.literal(table),
                "older_than": sql.timestamp_literal(expire_before),
                "retain_last": str(cfg.retain_last),
            },
        ),
        f"expire_snapshots of {table}",
        retried,
    )
    report.expired_data_files = _num(expired[0] if expired else None, "deleted_data_files_count")

    # After expiry, so files of just-expired snapshots are deleted by expiry, not here; the
    # margin keeps files of commits still in flight.
    orphans_before = utc_now() - dt.timedelta(days=cfg.orphan_margin_days)
    orphans = call(
        spark,
        "remove_orphan_files",
        {"table": sql.literal(table), "older_than": sql.timestamp_literal(orphans_before)},
    )
    report.orphans_removed = len(orphans)
    report.after = table_stats(spark, table)


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
    rows_frame(spark, [row], MAINTENANCE_RUNS.struct()).writeTo(
        qualified(spark, MAINTENANCE_RUNS)
    ).append()


def maintain(spark: SparkSession, cfg: MaintainConfig) -> list[TableReport]:
    """Maintain each table; a failing table is reported and the others still run."""
    tables.ensure(spark, (MAINTENANCE_RUNS,))
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
        log.info("%s", report.line())
        record(spark, cfg, report, started)
        reports.append(report)
    return reports
