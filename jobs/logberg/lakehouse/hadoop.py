"""Hadoop's S3A settings: the one place that knows how to reach an S3-compatible store.

Spark sessions take them with the `spark.hadoop.` prefix, the local metastore as plain
site properties; the charts render the same keys (tests/static/test_charts.py compares).
"""

from __future__ import annotations

S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# S3-compatible servers check the region in the request signature; theirs is this by default.
COMPATIBLE_REGION = "us-east-1"


def s3a_properties(
    endpoint: str | None, path_style: bool = True, region: str | None = None
) -> dict[str, str]:
    """S3A properties for an endpoint (None: AWS itself, found by region)."""
    props = {"fs.s3.impl": S3A}  # s3:// and s3a:// both go through S3A
    if endpoint:
        props.update(
            {
                "fs.s3a.endpoint": endpoint,
                "fs.s3a.path.style.access": str(path_style).lower(),
                "fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https")).lower(),
            }
        )
        region = region or COMPATIBLE_REGION
    if region:
        props["fs.s3a.endpoint.region"] = region
    return props


def spark_properties(hadoop: dict[str, str]) -> dict[str, str]:
    """Hadoop properties as Spark conf (`spark.hadoop.<key>`)."""
    return {f"spark.hadoop.{k}": v for k, v in hadoop.items()}
