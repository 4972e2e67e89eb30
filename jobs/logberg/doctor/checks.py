"""The checks in order, each guarded, and how their results are printed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence

from logberg.doctor.metastore_checks import check_commit_lock, check_metastore
from logberg.doctor.results import IN_CLUSTER, CheckResult, Context, Status, failed, skipped
from logberg.doctor.table_checks import check_tables
from logberg.doctor.warehouse_check import check_warehouse

Check = Callable[[Context], CheckResult]
# The metastore's own database, checked between the metastore and the commit lock.
DATABASE_CHECKS = ("database", "schema version", "lock tables")
NOT_HERE = "the metastore's database is checked where its credentials are: " + IN_CLUSTER


def guard(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """A check that raises unexpectedly is a failed check, not a crashed doctor."""
    try:
        return check()
    except Exception as e:
        return failed(name, f"the check itself failed: {type(e).__name__}: {e}", "report this")


def unchecked_database(name: str) -> Check:
    return lambda ctx: skipped(name, IN_CLUSTER if ctx.cluster else NOT_HERE)


def diagnose(ctx: Context, database: Sequence[tuple[str, Check]] = ()) -> list[CheckResult]:
    """Every check, in order; `database` are the metastore database's checks where they can
    run (the local platform's), else each is reported as skipped, saying why."""
    db_checks = list(database) or [(n, unchecked_database(n)) for n in DATABASE_CHECKS]
    results = [guard("metastore", lambda: check_metastore(ctx))]
    for name, check in db_checks:
        results.append(guard(name, lambda check=check: check(ctx)))  # type: ignore[misc]
    results.append(guard("commit lock", lambda: check_commit_lock(ctx)))
    results.append(guard("warehouse", lambda: check_warehouse(ctx)))
    try:
        results += check_tables(ctx)
    except Exception as e:
        results.append(
            failed("tables", f"the check itself failed: {type(e).__name__}: {e}", "report this")
        )
    return results


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    return {st.value: sum(r.status is st for r in results) for st in Status}


def render_text(results: Sequence[CheckResult]) -> Iterator[str]:
    width = max(len(r.name) for r in results)
    for r in results:
        status = r.status.value.upper() if r.failed else r.status.value
        line = f"{status:7} {r.name:{width}}  {r.detail}"
        yield line + (f"  -> fix: {r.fix}" if r.fix else "")
    counts = summary(results)
    verdict = "all checks passed" if not counts["failed"] else "some checks failed"
    yield (
        f"{len(results)} checks: {counts['ok']} ok, {counts['failed']} failed, "
        f"{counts['skipped']} skipped ({verdict})"
    )


def report(results: Sequence[CheckResult], fmt: str) -> int:
    """Print the results (text or one JSON document); 0 when none failed, else 1."""
    if fmt == "json":
        doc = {
            "ok": not any(r.failed for r in results),
            "summary": summary(results),
            "checks": [r.to_dict() for r in results],
        }
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(render_text(results)))
    sys.stdout.flush()
    return 1 if any(r.failed for r in results) else 0
