"""Running the checks in order, rendering them, and the command line of `logberg doctor`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence

from logberg.errors import ConfigError
from logberg_platform.doctor.database_checks import (
    check_database,
    check_lock_tables,
    check_schema_version,
)
from logberg_platform.doctor.metastore_checks import check_commit_lock, check_metastore
from logberg_platform.doctor.results import CheckResult, Context, Status, failed
from logberg_platform.doctor.table_checks import check_tables
from logberg_platform.doctor.warehouse_check import check_warehouse
from logberg_platform.local_settings import LocalSettings

# ---- running the checks -------------------------------------------------------------------


def _guard(name: str, check: Callable[[], CheckResult]) -> CheckResult:
    """A check that raises unexpectedly is a failed check, not a crashed doctor."""
    try:
        return check()
    except Exception as e:
        return failed(name, f"the check itself failed: {type(e).__name__}: {e}", "report this")


def diagnose(settings: LocalSettings | None = None, timeout: float = 10.0) -> list[CheckResult]:
    """Every check, in order, on this environment's settings (LOGBERG_* over the home's)."""
    from logberg_platform import local

    try:
        s = settings or LocalSettings.from_env()
        cfg = local.lakehouse_config(s)
    except ConfigError as e:
        return [failed("settings", str(e), "correct the setting named")]
    cluster = os.environ.get("LOGBERG_PROFILE") == "cluster"
    ctx = Context(settings=s, config=cfg, timeout=timeout, cluster=cluster)
    try:
        results = [
            _guard("metastore", lambda: check_metastore(ctx)),
            _guard("database", lambda: check_database(ctx)),
            _guard("schema version", lambda: check_schema_version(ctx)),
            _guard("lock tables", lambda: check_lock_tables(ctx)),
            _guard("commit lock", lambda: check_commit_lock(ctx)),
            _guard("warehouse", lambda: check_warehouse(ctx)),
        ]
        try:
            results += check_tables(ctx)
        except Exception as e:
            results.append(
                failed("tables", f"the check itself failed: {type(e).__name__}: {e}", "report this")
            )
    finally:
        if ctx.db_conn is not None:
            ctx.db_conn.close()
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="one line per check and a summary (text), or one JSON document (json)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="for each network call (default 10)",
    )
    k = parser.add_argument_group("on a cluster (--k8s)")
    k.add_argument(
        "--k8s",
        action="store_true",
        help="check the release on a cluster: the operator and the metastore through the API, "
        "then these checks inside the release's toolbox pod",
    )
    k.add_argument("--context", default=os.environ.get("K8S_CONTEXT") or None)
    k.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or None)
    k.add_argument("--namespace", default=os.environ.get("K8S_NAMESPACE", "logberg"))
    k.add_argument("--release", default="logberg")
    k.add_argument("--operator-release", default="spark-operator")


def on_cluster(args: argparse.Namespace) -> list[CheckResult]:
    """`--k8s`: the API's view, then `logberg doctor` in the toolbox pod."""
    from logberg_platform.k8s import health, submit
    from logberg_platform.k8s.api_client import Kube, Target

    kube = Kube(Target(namespace=args.namespace, context=args.context, kubeconfig=args.kubeconfig))
    found = health.api_checks(kube, args.release, args.operator_release)
    try:
        found += health.inside(kube, submit.toolbox_pod(kube, args.release))
    except ConfigError as e:
        found.append({"name": "toolbox", "status": "failed", "detail": str(e), "fix": ""})
    return [CheckResult(r["name"], Status(r["status"]), r["detail"], r["fix"]) for r in found]


def run(args: argparse.Namespace) -> int:
    """Run every check and print the results; 0 when none failed, else 1."""
    results = on_cluster(args) if getattr(args, "k8s", False) else diagnose(timeout=args.timeout)
    if args.format == "json":
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m logberg_platform.doctor",
        description="check the local lakehouse piece by piece and say what to fix",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
