"""eks/'s IAM policies, exercised for real: logberg runs through S3A against an S3 server
that enforces them.

The Spark, metastore and History Server role policies in eks/iam.tf are rendered to the JSON
AWS would receive (tests/eks_support/terraform.py, variables at their defaults, bucket names as
Terraform would create them for account 123456789012). A private MinIO enforces them: each
process gets STS credentials whose session policy is the rendered role policy, so a request
succeeds only if that policy allows it, conditions (s3:prefix) included. MinIO is built with
AWS's rule that a GET/HEAD of a missing key answers 403, not 404, to a caller without
s3:ListBucket (tests/eks_support/minio_missing_key.go); test_server_answers_like_aws proves
the rule on every run.

Then, as on EKS: the metastore (`logberg local up`, Derby, the S3A of Hadoop 3.4) runs with
only the metastore role's credentials, the generator writes raw logs with admin credentials
(the upload path of `make eks-demo`), and `logberg ingest` / `logberg analytics` run with only
the Spark role's credentials. The tables must match the generator's manifest. A Spark
driver with the Spark role writes its event log under spark-events/ of the warehouse bucket
(below the marker object eks/s3.tf creates), and Spark's History Server reads it through
S3A with only the history role's credentials; that role reads nothing else and writes
nothing.

Not enforced here, and checked statically instead (test_unenforced_statements_present):
- KMS statements (kms:ViaService = s3/secretsmanager): a local server has no KMS key policy
  or service context, so they are split off before the policy reaches MinIO;
- the buckets' DenyInsecureTransport policy (aws:SecureTransport): the local server is plain
  http, so that deny would refuse everything.
- the metastore image on EKS uses Hadoop 3.1's S3A (SDK v1); the local metastore uses Hadoop
  3.4's. Both read the same paths under the warehouse bucket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.eks_support import minio
from tests.eks_support.spark_history import HistoryServer, write_event_log
from tests.eks_support.terraform import (
    Renderer,
    RenderError,
    policy_documents,
    resources,
    split_by_service,
    statements,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# Identifiers only the KMS/Secrets Manager statements name; those never reach MinIO.
FAKE_IDS = {
    "aws_kms_key.data.arn": "arn:aws:kms:eu-west-1:123456789012:key/test",
    "aws_db_instance.metastore.master_user_secret[0].secret_arn": (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-test"
    ),
}
DAYS = ("2025-01-06", "2025-01-07")


@dataclass
class Deployment:
    server: minio.MinioServer
    raw_bucket: str
    warehouse_bucket: str
    raw_prefix: str
    landing_uri: str
    warehouse_uri: str
    spark_env: dict[str, str]
    metastore_env: dict[str, str]
    history_env: dict[str, str]
    event_log_prefix: str
    event_log_uri: str
    base_env: dict[str, str]
    manifest: dict[str, Any]


def s3_policy(renderer: Renderer, name: str) -> dict[str, Any]:
    policy, _ = split_by_service(renderer.document(name), "s3")
    return policy


def logberg(args: list[str], env: dict[str, str], timeout: float = 900) -> str:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "logberg"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if proc.returncode != 0:
        causes = [ln for ln in proc.stderr.splitlines() if "Exception:" in ln or "Error:" in ln]
        pytest.fail(
            f"logberg {' '.join(args)} failed ({proc.returncode}); causes:\n"
            + "\n".join(causes[-12:])
            + f"\n--- stdout tail ---\n{proc.stdout[-2000:]}"
            + f"\n--- stderr tail ---\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("eks-s3-policies")
    renderer = Renderer(identifiers=FAKE_IDS)
    raw_bucket = renderer.bucket_name("raw")
    warehouse_bucket = renderer.bucket_name("warehouse")
    server = minio.MinioServer(data_dir=tmp / "minio", log_file=tmp / "minio.log")
    server.start()
    home = tmp / "home"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOGBERG_"))}
    base.update(
        {
            "LOGBERG_TOOLS": str(minio.tools_dir()),
            "LOGBERG_HOME": str(home),
            "LOGBERG_METASTORE_PORT": str(minio.free_port()),
            "LOGBERG_S3_PORT": str(minio.free_port()),  # no local versitygw here
            "LOGBERG_CONNECT_PORT": str(minio.free_port()),
            "LOGBERG_S3_ENDPOINT": server.endpoint,
            "LOGBERG_WAREHOUSE": renderer.value("${local.warehouse_uri}"),
            "LOGBERG_SPARK_MASTER": "local[2]",
            "LOGBERG_DRIVER_MEMORY": "1g",
            "LOGBERG_SHUFFLE_PARTITIONS": "2",
        }
    )
    metastore_env: dict[str, str] = {}
    try:
        admin = server.client()
        for bucket in (raw_bucket, warehouse_bucket):
            admin.create_bucket(Bucket=bucket)
            admin.put_bucket_versioning(
                Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}
            )
        spark_env = {**base, **server.role_env(s3_policy(renderer, "spark"), "logberg-spark")}
        metastore_env = {
            **base,
            **server.role_env(s3_policy(renderer, "metastore"), "logberg-metastore"),
        }
        history_env = server.role_env(s3_policy(renderer, "history"), "logberg-history")
        # The event-log directory's marker, as Terraform writes it (aws_s3_object).
        marker = resources("aws_s3_object")["event_log_dir"]
        assert marker["bucket"] == "${aws_s3_bucket.warehouse.id}"
        admin.put_object(
            Bucket=warehouse_bucket,
            Key=renderer.value(marker["key"]),
            Body=b"",
            ContentType=renderer.value(marker["content_type"]),
        )
        raw_prefix = renderer.value("${local.raw_prefix}")
        # The raw logs arrive as `make eks-demo` uploads them: admin credentials, under
        # s3://<raw bucket>/<raw prefix>.
        logberg(
            [
                "generate",
                "--output",
                f"s3://{raw_bucket}/{raw_prefix.rstrip('/')}",
                "--endpoint-url",
                server.endpoint,
                "--num-files",
                "2",
                "--lines-per-file",
                "3000",
                "--start-date",
                DAYS[0],
                "--end-date",
                DAYS[-1],
                "--seed",
                "20",
                "--malformed-rate",
                "0.005",
                "--quiet",
            ],
            {**base, **server.admin_env()},
        )
        listed = admin.list_objects_v2(
            Bucket=raw_bucket, Prefix=f"{raw_prefix}raw/nginx/_manifests/"
        )
        [key] = [o["Key"] for o in listed.get("Contents", [])]
        manifest = json.loads(admin.get_object(Bucket=raw_bucket, Key=key)["Body"].read())
        yield Deployment(
            server=server,
            raw_bucket=raw_bucket,
            warehouse_bucket=warehouse_bucket,
            raw_prefix=raw_prefix,
            landing_uri=renderer.value("${local.landing_uri}"),
            warehouse_uri=renderer.value("${local.warehouse_uri}"),
            spark_env=spark_env,
            metastore_env=metastore_env,
            history_env=history_env,
            event_log_prefix=renderer.value("${local.event_log_prefix}"),
            event_log_uri=renderer.value("${local.event_log_uri}"),
            base_env=base,
            manifest=manifest,
        )
    finally:
        if metastore_env:
            subprocess.run(
                [str(Path(sys.executable).parent / "logberg"), "local", "down"],
                env=metastore_env,
                capture_output=True,
                timeout=120,
                cwd=REPO,
            )
        server.stop()


def status(call: Any) -> int:
    try:
        call()
    except ClientError as e:
        return int(e.response["ResponseMetadata"]["HTTPStatusCode"])
    return 200


def test_server_answers_like_aws(deployment: Deployment) -> None:
    """The harness itself: conditions are evaluated, and a missing key is 403 without
    s3:ListBucket, 404 with it, as on AWS (stock MinIO answers 404 to both)."""
    server, bucket = deployment.server, deployment.raw_bucket
    arn = f"arn:aws:s3:::{bucket}"
    read = {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"{arn}/raw/*"]}
    list_raw = {
        "Effect": "Allow",
        "Action": ["s3:ListBucket"],
        "Resource": [arn],
        "Condition": {"StringLike": {"s3:prefix": ["raw/*"]}},
    }
    list_all = {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [arn]}

    def client(*statements: dict[str, Any]) -> Any:
        policy = {"Version": "2012-10-17", "Statement": list(statements)}
        return server.client(server.role_env(policy, "logberg-probe", seconds=900))

    conditioned = client(read, list_raw)
    assert status(lambda: conditioned.head_object(Bucket=bucket, Key="raw/none")) == 403
    assert status(lambda: conditioned.get_object(Bucket=bucket, Key="raw/none")) == 403
    assert status(lambda: conditioned.list_objects_v2(Bucket=bucket, Prefix="raw/x")) == 200
    assert status(lambda: conditioned.list_objects_v2(Bucket=bucket, Prefix="other/")) == 403
    listing = client(read, list_all)
    assert status(lambda: listing.head_object(Bucket=bucket, Key="raw/none")) == 404
    assert status(lambda: listing.put_object(Bucket=bucket, Key="raw/x", Body=b"x")) == 403


def test_ingest_and_analytics_with_only_the_role_policies(deployment: Deployment) -> None:
    """Defect 1 of issue #20: with a prefix-conditioned s3:ListBucket on the raw bucket,
    S3A's first HEAD of a path that is not an object (the input directory) is a 403 and
    the ingest fails with AccessDenied."""
    d = deployment
    # The jobs run in-process, each with its own role's credentials (d.spark_env), as
    # SparkApplications do; a Spark Connect server would have the metastore's.
    logberg(["local", "up", "--no-connect"], d.metastore_env, timeout=300)
    logberg(["ingest", "--input", d.landing_uri], d.spark_env)
    logberg(["analytics"], d.spark_env)

    # One query (one JVM): rows per day and each day's top IPs.
    out = logberg(
        [
            "query",
            "SELECT 'rows' AS kind, CAST(date AS STRING) AS day, '' AS ip, COUNT(*) AS n, "
            "0 AS rank FROM nginx_logs.access_logs GROUP BY date "
            "UNION ALL SELECT 'top', CAST(date AS STRING), ip_address, request_count, rank "
            "FROM nginx_logs.daily_top_ips",
            "--format",
            "jsonl",
        ],
        d.spark_env,
    )
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    days = d.manifest["days"]
    assert {r["day"]: r["n"] for r in rows if r["kind"] == "rows"} == {
        day: truth["valid"] for day, truth in days.items()
    }
    for day, truth in days.items():
        top = sorted(
            (r["rank"], r["ip"], r["n"]) for r in rows if r["kind"] == "top" and r["day"] == day
        )
        assert [[ip, n] for _, ip, n in top] == truth["top_ips"][:10], day
    # The warehouse really is in the S3 bucket the roles were given: the database
    # directory the metastore made (S3A mkdirs, with the metastore role) and the data files
    # Spark wrote (with the Spark role).
    listed = d.server.client().list_objects_v2(Bucket=d.warehouse_bucket, Prefix="warehouse/")
    keys = {o["Key"] for o in listed.get("Contents", [])}
    assert "warehouse/nginx_logs.db/" in keys
    assert any(k.endswith(".parquet") for k in keys)


def test_history_server_reads_event_logs_with_only_the_history_role(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A driver with the Spark role logs its events under spark-events/ (S3A); with only the
    history role, Spark's History Server (S3A again) opens the directory, lists the
    application and replays its log, and the requests S3A makes of that directory answer as
    they must. A prefix-conditioned s3:ListBucket, or no GetObject on the key "spark-events",
    makes the server exit at start (AccessDenied on the HEAD of "spark-events")."""
    d = deployment
    app_id = write_event_log(d.event_log_uri, {**d.base_env, **d.spark_env})
    server = HistoryServer(d.event_log_uri, d.server.endpoint, d.history_env, tmp_path)
    server.start()
    try:
        app = server.wait_for_application(app_id)
        assert app["name"] == "logberg-event-log-probe"
        jobs = server.api(f"applications/{app_id}/jobs")
        assert jobs and {j["status"] for j in jobs} == {"SUCCEEDED"}
    finally:
        server.stop()

    history = d.server.client(d.history_env)
    bucket, prefix = d.warehouse_bucket, d.event_log_prefix
    # S3A's status probe of the directory: a HEAD of the key, which is no object. Only a
    # 404 (not a 403) lets S3A go on and list the prefix.
    assert status(lambda: history.head_object(Bucket=bucket, Key=prefix)) == 404
    # ... then the listing it makes of it, and the one the chart's wait-event-logs makes.
    listed = history.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/", Delimiter="/")
    folder = f"{prefix}/eventlog_v2_{app_id}/"
    assert folder in {p["Prefix"] for p in listed.get("CommonPrefixes", [])}
    assert history.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/", MaxKeys=1)["KeyCount"]
    keys = [o["Key"] for o in history.list_objects_v2(Bucket=bucket, Prefix=folder)["Contents"]]
    [events] = [k for k in keys if k.startswith(f"{folder}events_")]
    assert history.head_object(Bucket=bucket, Key=events)["ContentLength"] > 0
    body = history.get_object(Bucket=bucket, Key=events)["Body"].read()
    assert body[:4] == bytes.fromhex("28b52ffd"), "a zstd frame (spark.eventLog.compress)"


def test_roles_stay_least_privilege(deployment: Deployment) -> None:
    """What the fix must not grant: Spark never writes or deletes raw logs nor reads outside
    the raw prefix; the metastore never touches the raw bucket; the History Server reads
    nothing outside spark-events/ (no table data) and writes or deletes nothing, not even
    there."""
    d = deployment
    admin = d.server.client()
    admin.put_object(Bucket=d.raw_bucket, Key="elsewhere/secret.log", Body=b"x")
    spark = d.server.client(d.spark_env)
    metastore = d.server.client(d.metastore_env)
    raw_key = f"{d.raw_prefix}probe.log"
    assert status(lambda: spark.put_object(Bucket=d.raw_bucket, Key=raw_key, Body=b"x")) == 403
    assert status(lambda: spark.delete_object(Bucket=d.raw_bucket, Key=raw_key)) == 403
    assert status(lambda: spark.get_object(Bucket=d.raw_bucket, Key="elsewhere/secret.log")) == 403
    assert status(lambda: metastore.list_objects_v2(Bucket=d.raw_bucket)) == 403
    assert status(lambda: metastore.get_object(Bucket=d.raw_bucket, Key=raw_key)) == 403

    history = d.server.client(d.history_env)
    bucket, prefix = d.warehouse_bucket, d.event_log_prefix
    table_file = "warehouse/nginx_logs.db/access_logs/data/00000-probe.parquet"
    event_log = f"{prefix}/eventlog_v2_local-probe/events_1_local-probe.zstd"
    neighbour = f"{prefix}-other/x"  # shares the prefix's name, not its folder
    for key in (table_file, event_log, neighbour):
        admin.put_object(Bucket=bucket, Key=key, Body=b"x")
    assert status(lambda: history.get_object(Bucket=bucket, Key=event_log)) == 200
    for key in (table_file, neighbour):
        assert status(partial(history.get_object, Bucket=bucket, Key=key)) == 403, key
        assert status(partial(history.head_object, Bucket=bucket, Key=key)) == 403, key
    assert status(lambda: history.list_objects_v2(Bucket=d.raw_bucket)) == 403
    assert status(lambda: history.get_object(Bucket=d.raw_bucket, Key=raw_key)) == 403
    for key in (f"{prefix}/new", event_log, f"{prefix}/", table_file, "x"):
        assert status(partial(history.put_object, Bucket=bucket, Key=key, Body=b"y")) == 403, key
        assert status(partial(history.delete_object, Bucket=bucket, Key=key)) == 403, key
    source = {"Bucket": bucket, "Key": event_log}
    copy = f"{prefix}/copy"
    assert status(lambda: history.copy_object(Bucket=bucket, Key=copy, CopySource=source)) == 403
    assert status(lambda: history.create_multipart_upload(Bucket=bucket, Key=copy)) == 403
    # S3A's bulk delete (a directory's keys): refused as a whole or key by key.
    try:
        out = history.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": event_log}]})
        assert not out.get("Deleted") and [e["Code"] for e in out["Errors"]] == ["AccessDenied"]
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # Nothing changed: the marker and the event log are there, unchanged; nothing was added.
    assert admin.get_object(Bucket=bucket, Key=event_log)["Body"].read() == b"x"
    assert admin.head_object(Bucket=bucket, Key=f"{prefix}/")["ContentLength"] == 0
    for key in (f"{prefix}/new", copy, "x"):
        assert status(partial(admin.head_object, Bucket=bucket, Key=key)) == 404, key


@pytest.mark.static
def test_unenforced_statements_present() -> None:
    """The statements MinIO cannot evaluate exist as designed (see the module docstring)."""
    renderer = Renderer(identifiers=FAKE_IDS)
    roles = (("spark", {"s3"}), ("metastore", {"s3", "secretsmanager"}), ("history", {"s3"}))
    for role, services in roles:
        _, others = split_by_service(renderer.document(role), "s3")
        kms = [st for st in others if all(a.startswith("kms:") for a in st["Action"])]
        if role == "history":  # it only reads
            assert [st["Action"] for st in others] == [["kms:Decrypt"]]
        via = {v for st in kms for v in st["Condition"]["StringEquals"]["kms:ViaService"]}
        assert via == {f"{s}.eu-west-1.amazonaws.com" for s in services}, role
        assert all(st["Resource"] == [FAKE_IDS["aws_kms_key.data.arn"]] for st in kms), role
    # Every bucket policy denies plain http (a bucket policy has principals: not rendered).
    docs = policy_documents()
    for name in ("bucket_tls_only", "access_logs_bucket"):
        deny = [st for st in statements(docs[name]) if st.get("effect") == "Deny"]
        assert [c["variable"] for st in deny for c in st["condition"]] == ["aws:SecureTransport"]
        with pytest.raises(RenderError):
            renderer.document(name)
