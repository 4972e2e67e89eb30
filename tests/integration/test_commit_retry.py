"""The one retry policy for Iceberg commit conflicts (logberg.lakehouse.commit_retry),
with the exceptions Iceberg really raises when another writer commits first: a
ValidationException from a validated overwrite and a CommitFailedException from a stale
metadata base, both made on a real table through the real metastore. The wait between
tries is injected, so no test sleeps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from logberg.lakehouse.commit_retry import CommitRetry, is_commit_conflict
from logberg.lakehouse.session import CATALOG

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("lakehouse")]
TABLE = f"{CATALOG}.nginx_logs.commit_retry_probe"


def _table(spark: Any) -> Any:
    jvm = spark._jvm
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, TABLE)


def _validated_overwrite(spark: Any, other_writer: Callable[[], None] | None = None) -> None:
    """An overwrite that must see no data added since the snapshot it started from (as
    ingest's overwrite by source file does); `other_writer` commits in between."""
    table = _table(spark)
    start = table.currentSnapshot().snapshotId()
    if other_writer is not None:
        other_writer()
    always = spark._jvm.org.apache.iceberg.expressions.Expressions.alwaysTrue()
    op = table.newOverwrite().validateFromSnapshot(start).conflictDetectionFilter(always)
    op.validateNoConflictingData().commit()


def _insert(spark: Any) -> None:
    spark.sql(f"INSERT INTO {TABLE} VALUES (1)")


@pytest.fixture(scope="module")
def errors(spark: Any) -> dict[str, Exception]:
    """Real errors: the two conflicts Iceberg raises, and an error that is no conflict."""
    spark.sql(f"DROP TABLE IF EXISTS {TABLE} PURGE")
    spark.sql(f"CREATE TABLE {TABLE} (id INT) USING iceberg")
    _insert(spark)
    out: dict[str, Exception] = {}
    try:
        _validated_overwrite(spark, other_writer=lambda: _insert(spark))
    except Exception as e:
        out["validation"] = e
    ops = _table(spark).operations()
    base = ops.current()
    _insert(spark)  # another writer moves the table on
    changed = spark._jvm.org.apache.iceberg.TableMetadata.buildFrom(base)
    try:
        ops.commit(base, changed.setProperties({"logberg.probe": "1"}).build())
    except Exception as e:
        out["commit_failed"] = e
    try:
        spark.sql(f"SELECT * FROM {CATALOG}.nginx_logs.no_such_table").collect()
    except Exception as e:
        out["other"] = e
    assert set(out) == {"validation", "commit_failed", "other"}, out
    return out


def test_iceberg_conflicts_are_recognised(errors: dict[str, Exception]) -> None:
    assert "org.apache.iceberg.exceptions.ValidationException" in str(errors["validation"])
    assert "org.apache.iceberg.exceptions.CommitFailedException" in str(errors["commit_failed"])
    assert is_commit_conflict(errors["validation"])
    assert is_commit_conflict(errors["commit_failed"])
    assert not is_commit_conflict(errors["other"])


def _failing(first: list[Exception], result: str = "done") -> Callable[[], str]:
    """A step that raises the given errors, one per call, then returns result."""
    left = list(first)

    def step() -> str:
        if left:
            raise left.pop(0)
        return result

    return step


def test_a_conflict_is_retried_at_once_then_with_short_growing_waits(
    errors: dict[str, Exception],
) -> None:
    waits: list[float] = []
    retried: list[None] = []
    policy = CommitRetry(retries=3, wait=waits.append)
    step = _failing([errors["validation"], errors["commit_failed"], errors["validation"]])
    assert policy.run(step, "a test step", lambda: retried.append(None)) == "done"
    assert waits == [0.25, 0.5] and len(retried) == 3


def test_the_last_conflict_is_raised_after_the_retries(errors: dict[str, Exception]) -> None:
    waits: list[float] = []
    policy = CommitRetry(retries=3, wait=waits.append)
    step = _failing([errors["validation"]] * 4)
    with pytest.raises(Exception) as raised:
        policy.run(step, "a test step")
    assert raised.value is errors["validation"]
    assert waits == [0.25, 0.5]
    with pytest.raises(Exception) as raised:  # no retries: the first conflict is raised
        CommitRetry(retries=0, wait=waits.append).run(_failing([errors["commit_failed"]]), "x")
    assert raised.value is errors["commit_failed"] and waits == [0.25, 0.5]


def test_other_errors_are_raised_at_once(errors: dict[str, Exception]) -> None:
    waits: list[float] = []
    with pytest.raises(Exception) as raised:
        CommitRetry(wait=waits.append).run(_failing([errors["other"]]), "a test step")
    assert raised.value is errors["other"] and waits == []


def test_no_wait_before_the_first_retry_and_none_over_the_cap() -> None:
    policy = CommitRetry(retries=10)
    assert [policy.delay(n) for n in range(1, 9)] == [0, 0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_a_real_conflict_is_retried_until_the_commit_lands(spark: Any, errors: Any) -> None:
    """The step is redone from the table's current state, as ingest redoes a batch: the
    first try meets another writer's commit, the second commits."""
    waits: list[float] = []
    tries: list[None] = []

    def step() -> int:
        tries.append(None)
        _validated_overwrite(spark, (lambda: _insert(spark)) if len(tries) == 1 else None)
        return len(tries)

    before = _table(spark).currentSnapshot().snapshotId()
    assert CommitRetry(wait=waits.append).run(step, "a validated overwrite") == 2
    assert waits == []  # the other writer's commit had landed: the retry starts at once
    assert _table(spark).currentSnapshot().snapshotId() != before


def test_maintenance_leaves_manifests_beaten_by_other_writers_to_the_next_run(
    spark: Any, errors: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's commits may replace, try after try, the manifests rewrite_manifests would
    rewrite: the run still expires snapshots and removes orphans, says the manifests were
    left, and stays ok. Any other error of that step still fails the table."""
    from logberg.pipeline import maintenance as m

    real_call = m.call
    called: list[str] = []

    def call(spark_: Any, procedure: str, args: dict[str, str]) -> Any:
        called.append(procedure)
        if procedure == "rewrite_manifests":
            raise errors["validation"]  # as Iceberg raised it on this table
        return real_call(spark_, procedure, args)

    monkeypatch.setattr(m, "call", call)
    cfg = m.MaintainConfig(tables=(TABLE.split(".", 1)[1],), max_retries=2)
    report = m.TableReport(table=cfg.tables[0])
    m.maintain_table(spark, cfg, report)
    assert called == [
        "rewrite_data_files",
        *["rewrite_manifests"] * 3,  # the first try and its two retries
        "expire_snapshots",
        "remove_orphan_files",
    ]
    assert (report.manifests_deferred, report.status, report.retries) == (True, "ok", 2)
    assert report.line().endswith("manifests left to the next run (concurrent commits): ok")

    def failing(spark_: Any, procedure: str, args: dict[str, str]) -> Any:
        if procedure == "rewrite_manifests":
            raise errors["other"]
        return real_call(spark_, procedure, args)

    monkeypatch.setattr(m, "call", failing)
    with pytest.raises(Exception, match="no_such_table"):
        m.maintain_table(spark, cfg, m.TableReport(table=cfg.tables[0]))
