"""The Iceberg tables' check: each table of the namespace has its current metadata file."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from logberg.doctor.results import CheckResult, Context, failed, ok, skipped
from logberg.doctor.warehouse_check import s3_client
from logberg.lakehouse.schema import DATABASE
from logberg.lakehouse.session import CATALOG, is_s3
from logberg.lakehouse.thrift import HiveMetastoreClient, MetastoreError, ThriftError

# ---- 6. the Iceberg tables' metadata files -------------------------------------------------


def _metadata_exists(ctx: Context, location: str) -> bool:
    """Whether the file or object exists; raises OSError or boto errors if it cannot tell."""
    parsed = urlparse(location)
    if is_s3(location):
        from botocore.exceptions import ClientError

        try:
            s3_client(ctx).head_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
        except ClientError as e:
            if str(e.response.get("Error", {}).get("Code", "")) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True
    if parsed.scheme in ("file", ""):
        return Path(parsed.path).is_file()
    raise ValueError(f"cannot check a {parsed.scheme}:// file")


def check_tables(ctx: Context) -> list[CheckResult]:
    if ctx.databases is None:
        return [skipped("tables", "the metastore does not answer (see above)")]
    if DATABASE not in ctx.databases:
        return [
            skipped(
                "tables",
                f"no {DATABASE} database in the metastore yet (`logberg ingest` creates it)",
            )
        ]
    results: list[CheckResult] = []
    with HiveMetastoreClient.from_uri(ctx.config.metastore_uri, ctx.timeout) as client:
        try:
            tables = client.get_all_tables(DATABASE)
        except (ThriftError, MetastoreError) as e:
            return [
                failed(
                    "tables", f"get_all_tables({DATABASE}) failed: {e}", ctx.hints.metastore_fix()
                )
            ]
        if not tables:
            return [ok("tables", f"{DATABASE} has no tables yet")]
        for table in sorted(tables):
            results.append(_check_table(ctx, client, table))
    return results


def _check_table(ctx: Context, client: HiveMetastoreClient, table: str) -> CheckResult:
    full = f"{DATABASE}.{table}"
    name = f"table {full}"
    try:
        params = client.get_table(DATABASE, table)
    except (ThriftError, MetastoreError) as e:
        return failed(name, f"get_table failed: {e}", "see the metastore's log")
    if params.get("table_type", "").upper() != "ICEBERG":
        return skipped(name, "not an Iceberg table")
    location = params.get("metadata_location", "")
    if not location:
        return failed(
            name,
            f"{full} is an Iceberg table without metadata_location in the metastore",
            f"drop it from the metastore (DROP TABLE {full}) and register its newest metadata "
            f"file: CALL {CATALOG}.system.register_table('{full}', '<...metadata.json>')",
        )
    try:
        exists = _metadata_exists(ctx, location)
    except Exception as e:  # a storage error other than "not found": say it, do not guess
        return failed(
            name,
            f"cannot check {full}'s current metadata file {location}: {e}",
            "check the warehouse (above) and its credentials",
        )
    if not exists:
        return failed(
            name,
            f"{full}: its current metadata file {location} is missing",
            f"restore {location}; else drop the table without PURGE (DROP TABLE {full}) and "
            f"register its newest remaining metadata file: CALL {CATALOG}.system."
            f"register_table('{full}', '<...metadata.json>')",
        )
    return ok(name, f"current metadata {location} exists")
