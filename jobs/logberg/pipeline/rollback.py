"""`logberg rollback TABLE --to SNAPSHOT_ID | --to-timestamp TS`: make an earlier snapshot of
one table current (Iceberg's rollback_to_snapshot / rollback_to_timestamp)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import SparkSession

from logberg.errors import ConfigError
from logberg.lakehouse import sql
from logberg.lakehouse.connect import query
from logberg.pipeline.maintenance import call, is_iceberg


@dataclass(frozen=True)
class RollbackConfig:
    table: str  # nginx_logs.<name>
    snapshot_id: int | None = None
    timestamp: dt.datetime | None = None  # naive UTC

    def __post_init__(self) -> None:
        if (self.snapshot_id is None) == (self.timestamp is None):
            raise ConfigError("rollback: give exactly one of --to and --to-timestamp")


@dataclass(frozen=True)
class RollbackResult:
    table: str
    previous: int | None
    current: int

    def summary(self) -> str:
        return f"{self.table}: previous snapshot {self.previous}, current snapshot {self.current}"


def parse_timestamp(value: str) -> dt.datetime:
    """ISO timestamp -> naive UTC (the session time zone); naive input is taken as UTC."""
    try:
        ts = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"--to-timestamp {value!r}: expected an ISO timestamp") from None
    return ts.astimezone(dt.timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def rollback(spark: SparkSession, cfg: RollbackConfig) -> RollbackResult:
    """Roll back; an unknown table or snapshot, or one that is not an ancestor of the
    current state, is a ConfigError."""
    if not is_iceberg(spark, cfg.table):
        raise ConfigError(f"TABLE {cfg.table}: no such Iceberg table")
    ancestors = {
        int(r.snapshot_id)
        for r in query(
            spark, f"SELECT snapshot_id FROM {cfg.table}.history WHERE is_current_ancestor"
        ).collect()
    }
    if cfg.snapshot_id is not None:
        known = query(
            spark, f"SELECT 1 FROM {cfg.table}.snapshots WHERE snapshot_id = {cfg.snapshot_id}"
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
        assert cfg.timestamp is not None  # __post_init__
        ts = sql.timestamp_literal(cfg.timestamp)
        older = {
            int(r.snapshot_id)
            for r in query(
                spark, f"SELECT snapshot_id FROM {cfg.table}.snapshots WHERE committed_at <= {ts}"
            ).collect()
        }
        if not older & ancestors:
            raise ConfigError(
                f"--to-timestamp {cfg.timestamp.isoformat()}: {cfg.table} has no snapshot that old"
            )
        procedure = "rollback_to_timestamp"
        arg = {"timestamp": ts}
    rows = call(spark, procedure, {"table": sql.literal(cfg.table), **arg})
    prev = rows[0].previous_snapshot_id
    return RollbackResult(
        cfg.table, int(prev) if prev is not None else None, int(rows[0].current_snapshot_id)
    )
