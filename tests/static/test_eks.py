"""Static checks of the EKS Terraform in eks/: parsed with python-hcl2, no AWS account,
no terraform binary. Plus checkov (when installed: `make eks-checkov-venv`), a cross-check
of the Helm values Terraform hands the deploy flow (output chart_values) against the
charts' values.schema.json, and eks/eks.mk's targets read with `make -n`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

from tests.eks_support.terraform import (
    Renderer,
    as_list,
    blocks,
    locals_,
    norm,
    parsed,
    resources,
    statements,
    tf_files,
    typed_blocks,
    walk,
)

pytestmark = pytest.mark.static

REPO = Path(__file__).resolve().parents[2]
EKS = REPO / "eks"
TF_FILES = tf_files()


def expr(value: Any) -> str:
    return str(value).strip()


def refers_to(value: Any, address: str) -> bool:
    return address in str(value)


def test_files_parse() -> None:
    assert TF_FILES, "eks/*.tf missing"
    for path in TF_FILES:
        assert isinstance(parsed(path), dict), path
    expected = {"versions.tf", "variables.tf", "outputs.tf", "vpc.tf", "eks.tf", "rds.tf"}
    expected |= {"s3.tf", "iam.tf", "helm.tf", "ecr.tf", "msk.tf"}
    assert expected <= {p.name for p in TF_FILES}


# ---------------------------------------------------------------------------
# Versions and modules
# ---------------------------------------------------------------------------


def test_terraform_and_providers_pinned() -> None:
    tf = parsed(EKS / "versions.tf")["terraform"][0]
    assert re.fullmatch(r">=\s*1\.(5|[6-9]|1\d)(\.\d+)?", tf["required_version"])
    providers = {}
    for entry in as_list(tf["required_providers"]):
        providers.update(entry)
    assert {"aws", "helm", "kubernetes"} <= set(providers)
    for name, spec in providers.items():
        assert spec["version"].startswith("~>"), f"provider {name} not pinned with ~>"
        assert spec["source"] == f"hashicorp/{name}"


def test_every_module_has_pinned_version() -> None:
    mods = dict(blocks("module"))
    assert {"vpc", "eks"} <= set(mods)
    for name, body in mods.items():
        source = body["source"]
        if source.startswith(("./", "../")):
            continue
        version = body.get("version", "")
        assert re.fullmatch(r"(~>\s*)?\d+\.\d+(\.\d+)?", version), f"module {name}: {version!r}"
        assert source.startswith("terraform-aws-modules/"), source


def test_eks_module_inputs_match_v21() -> None:
    eks = dict(blocks("module"))["eks"]
    assert eks["version"].startswith("~> 21.")
    # v21 names (v20's cluster_name / cluster_version / cluster_addons are gone).
    for key in ("name", "kubernetes_version", "addons", "eks_managed_node_groups"):
        assert key in eks, key
    for old in ("cluster_name", "cluster_version", "cluster_addons"):
        assert old not in eks, old
    assert "eks-pod-identity-agent" in eks["addons"]
    assert {"vpc-cni", "coredns", "kube-proxy"} <= set(eks["addons"])
    assert eks["enable_cluster_creator_admin_permissions"] is True
    assert "var.admin_principal_arns" in str(eks["access_entries"])


# ---------------------------------------------------------------------------
# Network and node groups
# ---------------------------------------------------------------------------


def test_vpc_nat_and_subnet_tags() -> None:
    vpc = dict(blocks("module"))["vpc"]
    assert 'var.nat_mode == "single"' in vpc["single_nat_gateway"].replace("\\", "")
    assert 'var.nat_mode == "per_az"' in vpc["one_nat_gateway_per_az"].replace("\\", "")
    assert vpc["public_subnet_tags"] == {"kubernetes.io/role/elb": "1"}
    assert vpc["private_subnet_tags"] == {"kubernetes.io/role/internal-elb": "1"}
    assert vpc["map_public_ip_on_launch"] is False


def test_node_groups_private_with_pools() -> None:
    eks = dict(blocks("module"))["eks"]
    assert "module.vpc.private_subnets" in eks["subnet_ids"]
    groups = eks["eks_managed_node_groups"]
    assert set(groups) == {"system", "spark"}
    for name, group in groups.items():
        assert group["subnet_ids"] == "${module.vpc.private_subnets}", name
        assert "public" not in str(group)
    assert groups["system"]["capacity_type"] == "ON_DEMAND"
    assert "var.spark_capacity_type" in groups["spark"]["capacity_type"]
    assert "system_node_selector" in groups["system"]["labels"]
    assert "spark_node_selector" in groups["spark"]["labels"]
    taint = groups["spark"]["taints"]["spark"]
    assert taint["effect"] == "NO_SCHEDULE" and taint["value"] == "true"
    loc = locals_()
    assert loc["pool_label_key"] == "logberg.io/pool"
    assert loc["spark_taint_key"] == "logberg.io/spark"
    assert "system" in str(loc["system_node_selector"])
    assert "spark" in str(loc["spark_node_selector"])


# ---------------------------------------------------------------------------
# RDS
# ---------------------------------------------------------------------------


def test_rds_private_encrypted_managed_password() -> None:
    dbs = resources("aws_db_instance")
    assert dbs, "no aws_db_instance"
    for name, db in dbs.items():
        assert db["publicly_accessible"] is False, name
        assert db["storage_encrypted"] is True, name
        assert "kms_key_id" in db
        assert db["manage_master_user_password"] is True, name
        assert "password" not in db, "a password attribute would put it in state"
        assert db["engine"] == "postgres"
        assert "var.db_backup_retention_days" in db["backup_retention_period"]
        assert "var.db_deletion_protection" in db["deletion_protection"]
        assert "var.db_skip_final_snapshot" in db["skip_final_snapshot"]
        assert db["final_snapshot_identifier"]
        assert "database_subnet_group_name" in db["db_subnet_group_name"]


def test_rds_safe_defaults() -> None:
    variables = dict(blocks("variable"))
    assert variables["db_deletion_protection"]["default"] is True
    assert variables["db_skip_final_snapshot"]["default"] is False
    assert variables["db_engine_version"]["default"].startswith("16")


PUBLIC_CIDRS = {"0.0.0.0/0", "::/0"}


def _covers_5432(rule: dict[str, Any]) -> bool:
    proto = str(rule.get("ip_protocol", rule.get("protocol", "tcp")))
    if proto in ("-1", "all"):
        return True
    try:
        lo, hi = int(rule.get("from_port", 0)), int(rule.get("to_port", 65535))
    except (TypeError, ValueError):
        return True  # a computed port could be anything: treat as covering
    return lo <= 5432 <= hi


def _opens_public(rule: dict[str, Any]) -> bool:
    values = [str(v) for v in walk(rule) if isinstance(v, str)]
    return any(c in v for v in values for c in PUBLIC_CIDRS)


def test_no_public_ingress_on_postgres() -> None:
    rules: list[dict[str, Any]] = []
    for sg in resources("aws_security_group").values():
        rules += as_list(sg.get("ingress"))
    for rule in resources("aws_security_group_rule").values():
        if rule.get("type") == "ingress":
            rules.append(rule)
    rules += resources("aws_vpc_security_group_ingress_rule").values()
    for _name, body in blocks("module"):
        for key, value in body.items():
            if "ingress" in key or "security_group" in key:
                for node in walk(value):
                    if isinstance(node, dict) and ("from_port" in node or "to_port" in node):
                        rules.append(node)
    for rule in rules:
        assert not (_covers_5432(rule) and _opens_public(rule)), rule
    db_rules = [
        r
        for r in resources("aws_vpc_security_group_ingress_rule").values()
        if "metastore_db" in r["security_group_id"]
    ]
    assert db_rules, "no ingress rule for the metastore DB security group"
    for rule in db_rules:
        assert rule["from_port"] == 5432 and rule["to_port"] == 5432
        assert "cidr_ipv4" not in rule and "cidr_ipv6" not in rule


# ---------------------------------------------------------------------------
# S3
# ---------------------------------------------------------------------------


def _covering(type_name: str) -> list[str]:
    """Expressions naming the buckets each resource of type_name applies to."""
    loc = locals_()
    out = []
    for body in resources(type_name).values():
        target = f"{body.get('for_each', '')} {body['bucket']}"
        for _ in range(3):  # expand local.x references (all_buckets = merge(data_buckets...))
            for lname in re.findall(r"local\.(\w+)", target):
                if lname in loc and str(loc[lname]) not in target:
                    target += " " + str(loc[lname])
        out.append(target)
    return out


def test_buckets_blocked_encrypted_versioned_owner_enforced() -> None:
    buckets = resources("aws_s3_bucket")
    assert {"raw", "warehouse"} <= set(buckets)
    blocks_ = resources("aws_s3_bucket_public_access_block")
    for body in blocks_.values():
        for flag in (
            "block_public_acls",
            "block_public_policy",
            "ignore_public_acls",
            "restrict_public_buckets",
        ):
            assert body[flag] is True, flag
    for body in resources("aws_s3_bucket_ownership_controls").values():
        assert body["rule"][0]["object_ownership"] == "BucketOwnerEnforced"
    for body in resources("aws_s3_bucket_server_side_encryption_configuration").values():
        algo = body["rule"][0]["apply_server_side_encryption_by_default"][0]["sse_algorithm"]
        assert algo in ("aws:kms", "AES256")
    for body in resources("aws_s3_bucket_versioning").values():
        assert body["versioning_configuration"][0]["status"] == "Enabled"
    for name in buckets:
        ref = f"aws_s3_bucket.{name}"
        for type_name in (
            "aws_s3_bucket_public_access_block",
            "aws_s3_bucket_server_side_encryption_configuration",
            "aws_s3_bucket_ownership_controls",
            "aws_s3_bucket_versioning",
            "aws_s3_bucket_policy",
        ):
            assert any(ref in t for t in _covering(type_name)), f"{ref} lacks {type_name}"


def test_data_buckets_use_kms() -> None:
    sse = resources("aws_s3_bucket_server_side_encryption_configuration")["data"]
    default = sse["rule"][0]["apply_server_side_encryption_by_default"][0]
    assert default["sse_algorithm"] == "aws:kms"
    assert "aws_kms_key" in default["kms_master_key_id"]


def test_bucket_policies_deny_insecure_transport() -> None:
    docs = {name: body for _, name, body in typed_blocks("data", "aws_iam_policy_document")}
    for name in ("bucket_tls_only", "access_logs_bucket"):
        deny = [s for s in statements(docs[name]) if s.get("effect") == "Deny"]
        assert deny, name
        cond = deny[0]["condition"][0]
        assert cond["variable"] == "aws:SecureTransport" and cond["values"] == ["false"]
    for body in resources("aws_s3_bucket_policy").values():
        assert "aws_iam_policy_document" in body["policy"]


def test_raw_lifecycle_configurable() -> None:
    rule = resources("aws_s3_bucket_lifecycle_configuration")["raw"]["rule"][0]
    assert "var.raw_logs_lifecycle.transition_to_ia_days" in str(rule["transition"])
    assert "var.raw_logs_lifecycle.expiration_days" in str(rule)


# ---------------------------------------------------------------------------
# IAM
# ---------------------------------------------------------------------------

# Policy documents whose "*" resource is the key the policy is attached to.
KEY_POLICIES = {"kms_data", "kms_msk"}


def test_iam_policies_name_specific_resources() -> None:
    docs = list(typed_blocks("data", "aws_iam_policy_document"))
    assert docs
    for _, name, doc in docs:
        for st in statements(doc):
            actions = [str(a) for a in as_list(st.get("actions"))]
            res = [str(r) for r in as_list(st.get("resources"))]
            s3_actions = [a for a in actions if a.startswith("s3:")]
            if st.get("effect", "Allow") == "Allow":
                assert "s3:*" not in actions, f"{name}: s3:* allowed"
                assert "*" not in actions, f"{name}: * allowed"
            if s3_actions:
                assert res, f"{name}: s3 statement without resources"
                assert "*" not in res, f"{name}: s3 actions on Resource *"
                # each.value.arn only in documents iterating over the bucket locals.
                per_bucket = "_buckets" in str(doc.get("for_each", ""))
                for r in res:
                    assert "aws_s3_bucket." in r or (per_bucket and "each.value.arn" in r), (
                        f"{name}: {r}"
                    )
            if name not in KEY_POLICIES:
                assert "*" not in res, f"{name}: Resource * in {st.get('sid')}"


def test_spark_and_metastore_permissions_scoped() -> None:
    docs = {name: body for _, name, body in typed_blocks("data", "aws_iam_policy_document")}
    spark = {s["sid"]: s for s in statements(docs["spark"])}
    assert spark["ReadRawLogs"]["resources"] == [
        "${aws_s3_bucket.raw.arn}/${local.raw_dir}",
        "${aws_s3_bucket.raw.arn}/${local.raw_prefix}*",
    ]
    assert set(spark["ReadRawLogs"]["actions"]) <= {"s3:GetObject", "s3:GetObjectVersion"}
    assert "s3:PutObject" in spark["ReadWriteWarehouse"]["actions"]
    assert spark["ReadWriteWarehouse"]["resources"] == ["${aws_s3_bucket.warehouse.arn}/*"]
    for st in statements(docs["spark"]):  # spark never writes raw
        if any(a in ("s3:PutObject", "s3:DeleteObject") for a in st["actions"]):
            assert "aws_s3_bucket.raw" not in str(st["resources"])
    assert Renderer().value("${local.raw_prefix}") == "raw/"
    meta = {s["sid"]: s for s in statements(docs["metastore"])}
    assert meta["ReadDbSecret"]["resources"] == [
        "${aws_db_instance.metastore.master_user_secret[0].secret_arn}"
    ]
    assert "secretsmanager:GetSecretValue" in meta["ReadDbSecret"]["actions"]
    assert "aws_s3_bucket.warehouse" in str(meta["WarehouseDirectories"]["resources"])
    eso = statements(docs["external_secrets"])
    assert len(eso) == 1 and eso[0]["resources"] == ["${aws_iam_role.metastore.arn}"]


def test_pod_identity_trust_and_associations() -> None:
    docs = {name: body for _, name, body in typed_blocks("data", "aws_iam_policy_document")}
    for name in ("pod_identity_trust", "external_secrets_trust"):
        st = statements(docs[name])[0]
        assert st["principals"][0]["identifiers"] == ["pods.eks.amazonaws.com"]
        assert set(st["actions"]) == {"sts:AssumeRole", "sts:TagSession"}
        variables = {c["variable"] for c in st["condition"]}
        assert {
            "aws:RequestTag/kubernetes-namespace",
            "aws:RequestTag/kubernetes-service-account",
            "aws:RequestTag/eks-cluster-name",
        } <= variables
    assocs = resources("aws_eks_pod_identity_association")
    assert {"spark", "metastore", "history", "external_secrets"} <= set(assocs)
    assert "var.spark_service_account" in assocs["spark"]["service_account"]
    assert "var.metastore_service_account" in assocs["metastore"]["service_account"]
    # The History Server: its own service account beside the jobs, its own role.
    assert assocs["history"]["namespace"] == "${var.spark_namespace}"
    assert assocs["history"]["service_account"] == "${var.history_service_account}"
    assert assocs["history"]["role_arn"] == "${aws_iam_role.history.arn}"
    role = resources("aws_iam_role")["history"]
    assert role["assume_role_policy"] == (
        '${data.aws_iam_policy_document.pod_identity_trust["history"].json}'
    )
    identity = locals_()["pod_identities"]["history"]
    assert identity["namespace"] == "${var.spark_namespace}"
    assert identity["service_account"] == "${var.history_service_account}"
    assert resources("aws_iam_role_policy")["history"]["role"] == "${aws_iam_role.history.id}"
    assert not resources("aws_iam_openid_connect_provider")


# ---------------------------------------------------------------------------
# Variables, outputs, secrets
# ---------------------------------------------------------------------------

SENSITIVE = re.compile(r"password|secret", re.I)


def test_variables_typed_described_validated() -> None:
    variables = dict(blocks("variable"))
    assert len(variables) > 20
    for name, body in variables.items():
        assert str(body.get("description", "")).strip(), f"{name}: no description"
        assert "type" in body, f"{name}: no type"
        if expr(body["type"]) not in ("bool", "${bool}"):
            assert body.get("validation"), f"{name}: free-form value without validation"


def test_key_variable_validations_present() -> None:
    variables = dict(blocks("variable"))
    for name in (
        "region",
        "vpc_cidr",
        "name",
        "kubernetes_version",
        "nat_mode",
        "db_backup_retention_days",
    ):
        assert variables[name].get("validation"), name
    assert "contains(" in str(variables["kubernetes_version"]["validation"])
    assert "per_az" in str(variables["nat_mode"]["validation"])


def test_outputs_described_and_not_secret() -> None:
    outputs = dict(blocks("output"))
    for key in (
        "cluster_name",
        "kubeconfig_command",
        "raw_bucket_name",
        "warehouse_bucket_name",
        "rds_endpoint",
        "db_master_user_secret_arn",
        "spark_role_arn",
        "metastore_role_arn",
        "history_role_arn",
        # what `make eks-deploy` hands the deploy flow
        "image_registry",
        "spark_namespace",
        "metastore_namespace",
        "spark_operator_namespace",
        "chart_values",
    ):
        assert key in outputs, key
    for name, body in outputs.items():
        assert str(body.get("description", "")).strip(), f"{name}: no description"
        assert body.get("sensitive") in (None, False), f"{name}: a sensitive output"
        value = str(body["value"])
        assert "password" not in value.lower(), name
        assert "secret_string" not in value, name
        if SENSITIVE.search(name):
            assert name.endswith("_arn"), f"{name}: only identifiers of secrets may be output"


def test_no_secret_variables_or_values() -> None:
    for name, body in blocks("variable"):
        if SENSITIVE.search(name):
            assert "default" not in body, f"{name} has a default"
    example = EKS / "terraform.tfvars.example"
    assert example.exists()
    for line in example.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        if "=" in line and not line.lstrip().startswith("#"):
            assert not SENSITIVE.search(key), line
    forbidden = (
        "kubernetes_secret",
        "kubernetes_secret_v1",
        "aws_secretsmanager_secret_version",
        "random_password",
    )
    for rtype, name, _ in typed_blocks("resource"):
        assert rtype not in forbidden, f"{rtype}.{name} would put a credential in state"
    for rtype, name, _ in typed_blocks("data"):
        assert rtype != "aws_secretsmanager_secret_version", f"{rtype}.{name} reads a secret"
    text = "\n".join(p.read_text() for p in EKS.rglob("*") if p.is_file())
    assert not re.search(r"AKIA[0-9A-Z]{16}", text)
    assert "secret_string" not in text


# ---------------------------------------------------------------------------
# Providers and Helm releases
# ---------------------------------------------------------------------------


def test_providers_use_exec_token() -> None:
    provs = {}
    for entry in parsed(EKS / "providers.tf")["provider"]:
        provs.update(entry)
    k8s = provs["kubernetes"]
    helm = provs["helm"]["kubernetes"]
    helm = helm[0] if isinstance(helm, list) else helm
    for conf in (k8s, helm):
        exec_ = conf["exec"]
        exec_ = exec_[0] if isinstance(exec_, list) else exec_
        assert exec_["command"] == "aws"
        assert exec_["args"][:2] == ["eks", "get-token"]
        assert "token" not in conf and "client_key" not in conf and "password" not in conf


def hcl2_load(path: Path) -> dict[str, Any]:
    import hcl2

    with path.open(encoding="utf-8") as fh:
        return {k: v for k, v in norm(hcl2.load(fh)).items() if not k.startswith("__")}


def _versions() -> dict[str, Any]:
    with (REPO / "jobs/logberg/versions.toml").open("rb") as fh:
        return tomllib.load(fh)


# The releases Terraform installs: the AWS integration only. spark-operator, hive-metastore
# and logberg come from the deploy flow (`make eks-deploy` -> `make k8s-deploy`).
AWS_RELEASES = {"external_secrets", "metastore_db_secret", "metastore_pod_sg"}
REMOVED_VARIABLES = {"metastore_image", "logberg_image", "spark_operator_chart_version"}


def test_platform_releases_are_not_terraform_releases() -> None:
    rel = resources("helm_release")
    assert set(rel) == AWS_RELEASES
    for name, body in rel.items():
        assert body["count"] == "${local.chart_count}", name
        assert "set" not in body and "set_sensitive" not in body, name
        assert "../charts" not in str(body["chart"]), f"{name}: a chart of the deploy flow"
    assert locals_()["chart_count"] == "${var.install_charts ? 1 : 0}"
    variables = dict(blocks("variable"))
    assert variables["install_charts"]["default"] is True
    assert "make eks-deploy" in variables["install_charts"]["description"]
    assert not REMOVED_VARIABLES & set(variables)
    # The operator chart's version is pinned once, in versions.toml (the flow reads it).
    assert _versions()["kubernetes"]["spark_operator_chart"]
    text = "\n".join(p.read_text() for p in TF_FILES)
    for gone in ("kubeflow.github.io", "spark_operator_chart", *REMOVED_VARIABLES):
        assert gone not in text, gone
    example = hcl2_load(EKS / "terraform.tfvars.example")
    assert set(example) <= set(variables), set(example) - set(variables)


def test_spark_operator_values_file_present() -> None:
    path = REPO / "charts/values/spark-operator.yaml"
    if not path.exists():
        pytest.skip("charts/values/spark-operator.yaml not written yet (helm.tf file()s it)")
    import yaml

    assert isinstance(yaml.safe_load(path.read_text()) or {}, dict)


def _leaf_paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaf_paths(v, (*prefix, k))
    else:
        yield prefix


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema and str(schema["$ref"]).startswith("#/"):
        target: Any = root
        for part in str(schema["$ref"])[2:].split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _properties(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any] | None:
    """Declared properties of a schema node; None means a free-form map."""
    schema = _resolve(schema, root)
    props: dict[str, Any] = dict(schema.get("properties", {}))
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []):
            props.update(_resolve(sub, root).get("properties", {}))
    if not props:
        return None
    return props


def _missing_paths(values: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    missing = []
    for path in _leaf_paths(values):
        node = schema
        for i, key in enumerate(path):
            props = _properties(node, schema)
            if props is None:
                break  # free-form object (nodeSelector, annotations, resources, ...)
            if key not in props:
                missing.append(".".join(path[: i + 1]))
                break
            node = props[key]
    return sorted(set(missing))


# Release (the deploy flow's name) -> (the local of helm.tf holding its values, the chart
# whose values.schema.json checks them or None for the upstream spark-operator chart, the
# keys the chart needs from Terraform). The flow sets image.* itself.
CHART_VALUES = {
    "hive-metastore": (
        "metastore_values",
        "hive-metastore",
        {
            "replicaCount",
            "database.type",
            "database.host",
            "database.port",
            "database.name",
            "database.existingSecret",
            "database.usernameKey",
            "database.passwordKey",
            # Beyond the agreed list, also in the chart's schema: TLS to RDS and the
            # regional S3 endpoint S3A 3.1 needs.
            "database.jdbcParams",
            "s3.endpoint",
            "s3.region",
            "networkPolicy.clientNamespaceSelector",
            "warehouse.dir",
            "serviceAccount.create",
            "serviceAccount.name",
            "serviceAccount.annotations",
            "nodeSelector",
            "tolerations",
            "resources",
        },
    ),
    "logberg": (
        "logberg_values",
        "logberg",
        {
            "metastore.uri",
            "warehouse.uri",
            "landing.uri",
            "serviceAccount.create",
            "serviceAccount.name",
            "s3.region",  # beyond the agreed list; in the chart's schema
            "spark.executor.nodeSelector",
            "spark.executor.tolerations",
            "ingest.enabled",
            "analytics.enabled",
            "eventLog.enabled",
            "eventLog.dir",
            "historyServer.enabled",
            "historyServer.serviceAccount.create",
            "historyServer.serviceAccount.name",
            "historyServer.nodeSelector",  # beyond the agreed list; in the chart's schema
        },
    ),
    "spark-operator": (
        "spark_operator_values",
        None,
        {"spark.jobNamespaces", "controller.nodeSelector", "webhook.nodeSelector"},
    ),
}
SCHEMA_CHECKED = sorted(r for r, (_, chart, _) in CHART_VALUES.items() if chart)
# Maps and lists the charts take whole (a required key, not its contents).
FREE_FORM = {"nodeSelector", "tolerations", "resources", "serviceAccount.annotations"}
FREE_FORM |= {"spark.executor.nodeSelector", "spark.executor.tolerations"}
FREE_FORM |= {"networkPolicy.clientNamespaceSelector"}
FREE_FORM |= {"controller.nodeSelector", "webhook.nodeSelector"}
FREE_FORM |= {"historyServer.nodeSelector"}


def _top_paths(values: dict[str, Any], free_form: set[str]) -> set[str]:
    out = set()
    for path in _leaf_paths(values):
        for i in range(1, len(path) + 1):
            if ".".join(path[:i]) in free_form:
                out.add(".".join(path[:i]))
                break
        else:
            out.add(".".join(path))
    return out


def test_chart_values_output_names_the_flow_releases() -> None:
    """The chart_values output has one YAML document per release of the deploy flow, and
    `make eks-values` writes each to the values-<release>.yaml eks-deploy passes."""
    output = dict(blocks("output"))["chart_values"]["value"]
    assert output == {
        release: f"${{yamlencode(local.{local_name})}}"
        for release, (local_name, _, _) in CHART_VALUES.items()
    }
    mk = _eks_mk_vars()
    assert mk["EKS_RELEASES"].split() == sorted(CHART_VALUES)


@pytest.mark.parametrize("release", sorted(CHART_VALUES))
def test_chart_values_keys(release: str) -> None:
    local_name, _, required = CHART_VALUES[release]
    values = locals_()[local_name]
    assert "image" not in values, "the deploy flow sets the image (IMAGE_REGISTRY, content tag)"
    assert _top_paths(values, FREE_FORM) == required
    if release == "hive-metastore":
        assert values["database"]["type"] == "postgres"
        assert values["database"]["existingSecret"] == "${var.metastore_db_creds_name}"
    elif release == "logberg":
        assert values["serviceAccount"]["name"] == "${var.spark_service_account}"
        # The History Server's own service account is the one the history role is for,
        # and it reads the prefix the drivers write to: the one that role may read.
        history = values["historyServer"]
        assert history["serviceAccount"] == {
            "create": True,
            "name": "${var.history_service_account}",
        }
        assert history["enabled"] == "${var.history_server_enabled}"
        assert values["eventLog"] == {"enabled": True, "dir": "${local.event_log_uri}"}
        bucket = TF.bucket_name("warehouse")
        assert TF.value(values["eventLog"]["dir"]) == f"s3a://{bucket}/spark-events"
    else:  # the operator watches the jobs' namespace, where logberg creates the Spark SA
        assert values["spark"]["jobNamespaces"] == ["${var.spark_namespace}"]
        assert TF.data(values["spark"]["jobNamespaces"]) == [
            dict(blocks("variable"))["spark_namespace"]["default"]
        ]


@pytest.mark.parametrize("release", SCHEMA_CHECKED)
def test_chart_values_match_schema(release: str) -> None:
    local_name, chart, _ = CHART_VALUES[release]
    schema_path = REPO / "charts" / str(chart) / "values.schema.json"
    if not schema_path.exists():
        pytest.skip(f"{schema_path.relative_to(REPO)} not written yet")
    schema = json.loads(schema_path.read_text())
    assert _missing_paths(locals_()[local_name], schema) == []


def _missing_defaults(values: dict[str, Any], defaults: dict[str, Any]) -> list[str]:
    """Paths of `values` the chart's values.yaml does not have (an empty map there is
    free-form, e.g. nodeSelector: {})."""
    missing = []
    for path in _leaf_paths(values):
        node: Any = defaults
        for i, key in enumerate(path):
            if isinstance(node, dict) and not node and i:
                break
            if not isinstance(node, dict) or key not in node:
                missing.append(".".join(path[: i + 1]))
                break
            node = node[key]
    return sorted(set(missing))


def test_operator_values_match_the_pinned_chart() -> None:
    """The upstream chart has no values.schema.json: its values.yaml, at the version the
    flow installs (cached by `make tools` in .tools/charts), names every key."""
    import yaml

    version = _versions()["kubernetes"]["spark_operator_chart"]
    chart = REPO / ".tools/charts" / f"spark-operator-{version}"
    # `make tools` (a prerequisite of `make test`) caches it: missing is a setup error.
    assert (chart / "values.yaml").is_file(), f"{chart.relative_to(REPO)} missing: run make tools"
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    assert _missing_defaults({"spark": {"nope": 1}}, defaults) == ["spark.nope"]
    assert _missing_defaults(locals_()["spark_operator_values"], defaults) == []
    shared = yaml.safe_load((REPO / "charts/values/spark-operator.yaml").read_text())
    assert _missing_defaults(shared, defaults) == []


def test_local_db_secret_chart_values_match_schema() -> None:
    chart = EKS / "charts/metastore-db-secret"
    rel = resources("helm_release")["metastore_db_secret"]
    assert rel["chart"] == "${path.module}/charts/metastore-db-secret"
    schema = json.loads((chart / "values.schema.json").read_text())
    keys = set(re.findall(r"(\w+)\s*=", rel["values"][0]))
    assert keys == set(schema["properties"]) == set(schema["required"])


# ---------------------------------------------------------------------------
# eks.mk and checkov
# ---------------------------------------------------------------------------


def test_make_targets_documented() -> None:
    text = (EKS / "eks.mk").read_text()
    targets = re.findall(r"^([a-zA-Z0-9_-]+):(?!=)(.*)$", text, re.M)
    names = {t for t, _ in targets}
    assert {"eks-up", "eks-down", "eks-plan", "eks-demo", "eks-checkov-venv"} <= names
    assert {"eks-values", "eks-push", "eks-deploy"} <= names
    root = (REPO / "Makefile").read_text()
    for name, rest in targets:
        if re.search(rf"^{name}:.*## ", root, re.M):
            continue  # a prerequisite added to a documented root target (test: eks-minio)
        assert "## " in rest, f"target {name} has no ## description"
    assert re.search(r"^EKS_VARS\s+\?=", text, re.M) and "EKS_CONFIRM" in text
    assert "checkov:" not in re.sub(r"eks-checkov-venv:", "", text)


def _eks_mk_vars() -> dict[str, str]:
    """The simple assignments of eks/eks.mk and of the root Makefile's shared settings
    (NAME := / ?= / = value), unexpanded."""
    text = (EKS / "eks.mk").read_text() + (REPO / "Makefile").read_text()
    found = re.findall(r"^([A-Z][A-Z0-9_]*)\s*(?::=|\?=|=)[ \t]*(.*)$", text, re.M)
    return {name: value.strip() for name, value in found}


def _make_n(*args: str, home: Path) -> str:
    """`make -n` from the repository root: the commands, none of them run except the
    recursive make lines, which run as `make -n` too."""
    exe = shutil.which("make")
    if exe is None:
        pytest.skip("make not installed")
    env = {**os.environ, "CHECKPOINT_DISABLE": "1", "MAKEFLAGS": ""}
    proc = subprocess.run(
        [exe, "-n", "--no-print-directory", *args, f"LOGBERG_HOME={home}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_eks_deploy_runs_the_k8s_deploy_flow(tmp_path: Path) -> None:
    """eks-deploy reads the namespaces and the registry from the Terraform outputs and runs
    `make k8s-deploy K8S_TARGET=eks` with them and the three values files eks-values writes:
    the flow, not Terraform, installs spark-operator, hive-metastore and logberg."""
    make = _make_n("eks-deploy", home=tmp_path)
    assert re.search(r'EKS_CONTEXT="logberg-eks" eks/scripts/deploy-vars.sh "\S+/deploy.vars', make)
    text = (EKS / "scripts/deploy-vars.sh").read_text()
    # The outputs eks-deploy reads, into the make variables of the flow.
    reads = dict(re.findall(r"(\w+)=\$\([^()]* output -raw (\w+)\)", text))
    passes = dict(re.findall(r'"([A-Z0-9_]+)=\$(\w+)"', text))
    wanted = {
        "K8S_NAMESPACE": "spark_namespace",
        "METASTORE_NAMESPACE": "metastore_namespace",
        "OPERATOR_NAMESPACE": "spark_operator_namespace",
        "IMAGE_REGISTRY": "image_registry",
    }
    assert {var: reads.get(shell) for var, shell in passes.items()} == wanted
    assert set(wanted.values()) <= set(dict(blocks("output")))
    assert re.search(r'aws eks update-kubeconfig .*--alias "\$EKS_CONTEXT"', text)
    # What the flow then gets, with the values a deployment's outputs would give.
    outputs = {
        "K8S_NAMESPACE": "jobs-ns",
        "METASTORE_NAMESPACE": "hms-ns",
        "OPERATOR_NAMESPACE": "op-ns",
        "IMAGE_REGISTRY": "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
    }
    (tmp_path / "eks").mkdir()
    vars_file = tmp_path / "eks" / Path(_eks_mk_vars()["EKS_DEPLOY_VARS"]).name
    vars_file.write_text("".join(f"{k}={v}\n" for k, v in outputs.items()))
    text = _make_n("eks-deploy", home=tmp_path)
    [deploy] = re.findall(r"logberg k8s .* deploy .*?(?=\n\S|\Z)", text, re.S)
    argv = deploy.replace("\\\n", " ").split()
    assert "--target=eks" in argv and "--context=logberg-eks" in argv
    assert "--namespace=jobs-ns" in argv
    assert "--metastore-namespace=hms-ns" in argv
    assert "--operator-namespace=op-ns" in argv
    assert f"--image-registry={outputs['IMAGE_REGISTRY']}" in argv
    values = [a.split("=", 1)[1] for a in argv if a.startswith("--values=")]
    assert values == [
        f"{release}={tmp_path}/eks/values-{release}.yaml" for release in sorted(CHART_VALUES)
    ]


def test_eks_values_writes_one_file_per_release(tmp_path: Path) -> None:
    """The script `make eks-values` pipes `terraform output -json chart_values` into."""
    chart_values = {r: f"# {r}\nkey: value\n" for r in CHART_VALUES}
    run = [str(REPO / ".venv/bin/python"), str(EKS / "scripts/write_values.py"), str(tmp_path)]
    subprocess.run(run, input=json.dumps(chart_values), text=True, check=True)
    for release, body in chart_values.items():
        assert (tmp_path / f"values-{release}.yaml").read_text() == body
    bad = subprocess.run(run, input='{"../x": ""}', text=True, capture_output=True)
    assert bad.returncode != 0 and not (tmp_path.parent / "x.yaml").exists()
    make = _make_n("eks-values", home=tmp_path)
    assert re.search(r"output -json chart_values \| \S+ eks/scripts/write_values.py ", make)
    assert f"{tmp_path}/eks" in make


def test_eks_push_logs_in_without_the_password_and_pushes_content_tags(tmp_path: Path) -> None:
    # The recipe checks for docker, then runs eks/scripts/push.sh, which does the rest.
    make = _make_n("eks-push", home=tmp_path).splitlines()
    need = next(i for i, line in enumerate(make) if "command -v docker" in line)
    assert "not found" in make[need] and "eks/scripts/push.sh" in make[need + 1]
    assert make[need + 1].split("push.sh", 1)[1].split() == _eks_mk_vars()["EKS_IMAGES"].split()
    script = (EKS / "scripts/push.sh").read_text()
    text = script.replace('"$DOCKER"', "docker").replace("$DOCKER", "docker")
    text = text.replace('env "${images[@]}"', "images")
    lines = text.splitlines()
    # Docker is checked first, with a message, before anything is built or pushed.
    daemon = next(i for i, line in enumerate(lines) if "docker info" in line)
    build = next(i for i, line in enumerate(lines) if "images build" in line)
    assert daemon < build and 'images build "$@"' in lines[build]
    # The password only ever goes through a pipe.
    assert re.search(
        r"aws ecr get-login-password [^|\n]*\| docker login --username AWS "
        r'--password-stdin "\$host"',
        text,
    )
    assert not re.search(r"docker login[^\n]*(--password[ =]|\s-p\s)", text)
    assert re.search(r"registry=\$\([^()]* output -raw image_registry\)", text)
    # Each image at its content tag (`images tag KEY`), as <registry>/logberg-<key>:<tag>;
    # a tag the registry has already is not pushed again (immutable tags).
    assert 'for key in "$@"; do' in text
    assert re.search(r'ref=\$\(.*images tag "\$key"\)', text)
    assert 'docker push "$registry/$ref"' in text
    assert "describe-images" in text and "continue" in text


def test_readme_commands_exist() -> None:
    """Every `make TARGET` eks/README.md names is a target of the Makefiles."""
    defined: set[str] = set()
    for mk in (REPO / "Makefile", *REPO.glob("charts/*.mk"), EKS / "eks.mk"):
        text = mk.read_text()
        defined |= set(re.findall(r"^([a-zA-Z0-9_-]+)\s*:(?!=)", text, re.M))
    readme = (EKS / "README.md").read_text()
    fenced = re.findall(r"```.*?```", readme, re.S)
    inline = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", readme, flags=re.S))
    named = set()
    for span in fenced + inline:
        for words in re.findall(r"\bmake ((?:[a-z0-9][a-z0-9-]*\s*)+)", span):
            named |= set(words.split())
    assert {"eks-up", "eks-push", "eks-deploy", "eks-demo", "eks-down", "k8s-deploy"} <= named
    assert named <= defined, named - defined


def test_demo_script_syntax() -> None:
    bash = shutil.which("bash")
    assert bash
    subprocess.run([bash, "-n", str(EKS / "scripts/run-scheduled.sh")], check=True)


def _checkov() -> str | None:
    local = REPO / ".tools/checkov-venv/bin/checkov"
    if local.exists():
        return str(local)
    return shutil.which("checkov")


def test_checkov_passes() -> None:
    exe = _checkov()
    if exe is None:
        pytest.skip("checkov not installed: run `make eks-checkov-venv`")
    env = dict(os.environ)
    env.setdefault("BC_SKIP_MAPPING", "TRUE")
    proc = subprocess.run(
        [
            exe,
            "-d",
            str(EKS),
            "--download-external-modules",
            "false",
            "--skip-download",
            # Only External Secrets and SecurityGroupPolicy CRs (no checkov check applies)
            # whose schemas require values Terraform sets; rendering with defaults fails.
            "--skip-path",
            "charts/metastore-db-secret",
            "--skip-path",
            "charts/metastore-pod-sg",
            "--quiet",
            "--compact",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]


def test_local_db_secret_chart_renders() -> None:
    helm = REPO / ".tools/bin/helm"
    exe = str(helm) if helm.exists() else shutil.which("helm")
    if exe is None:
        pytest.skip("helm not installed: run `make tools`")
    chart = EKS / "charts/metastore-db-secret"
    sets = (
        "region=eu-west-1,roleArn=arn:aws:iam::123456789012:role/logberg-metastore,"
        "secretArn=arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-1-AbCdEf"
    )
    out = subprocess.run(
        [exe, "template", "metastore-db-secret", str(chart), "-n", "metastore", "--set", sets],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    import yaml

    docs = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    store = docs["SecretStore"]["spec"]["provider"]["aws"]
    assert store["service"] == "SecretsManager" and "auth" not in store
    assert store["role"].endswith(":role/logberg-metastore")
    ext = docs["ExternalSecret"]["spec"]
    assert ext["target"]["name"] == "hive-metastore-db"
    # Exactly the keys the hive-metastore chart reads, from the RDS secret's JSON.
    assert {d["secretKey"]: d["remoteRef"]["property"] for d in ext["data"]} == {
        "username": "username",
        "password": "password",
    }
    assert {d["remoteRef"]["key"] for d in ext["data"]} == {sets.split("secretArn=")[1]}
    assert ext["refreshInterval"] == "5m" and "dataFrom" not in ext
    # Without the Terraform-set values the chart refuses to render.
    bad = subprocess.run(
        [exe, "template", "x", str(chart)], capture_output=True, text=True, check=False
    )
    assert bad.returncode != 0


# ---------------------------------------------------------------------------
# Issue #20: what would break on the first apply. Each test below fails on the eks/ and
# values-eks.yaml files of c7906fa (checked when the test was written).
# ---------------------------------------------------------------------------

TF = Renderer(
    identifiers={
        "aws_kms_key.data.arn": "arn:aws:kms:eu-west-1:123456789012:key/test",
        "aws_db_instance.metastore.master_user_secret[0].secret_arn": (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-test"
        ),
    }
)


def _helm() -> str | None:
    local = REPO / ".tools/bin/helm"
    return str(local) if local.exists() else shutil.which("helm")


def _render(chart: Path, release: str, namespace: str, *args: str) -> list[dict[str, Any]]:
    exe = _helm()
    if exe is None:
        pytest.skip("helm not installed: run `make tools`")
    out = subprocess.run(
        [exe, "template", release, str(chart), "-n", namespace, *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    import yaml

    return [d for d in yaml.safe_load_all(out) if d]


def _values_eks(chart: str) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load((REPO / "charts" / chart / "values-eks.yaml").read_text()))


def test_spark_may_list_the_raw_bucket_without_prefix_condition() -> None:
    """Defect 1 (statically; tests/integration/test_eks_s3_policies.py runs it for real):
    S3A's HEAD of a missing key is a 403 unless s3:ListBucket is granted without an s3:prefix
    condition, and S3A's probe of the landing directory is a HEAD of the key "raw"."""
    spark = TF.document("spark")["Statement"]
    raw = TF.reference("aws_s3_bucket.raw.arn")
    listing = [st for st in spark if "s3:ListBucket" in st["Action"] and st["Resource"] == [raw]]
    assert listing and all("Condition" not in st for st in listing)
    reads = {r for st in spark if "s3:GetObject" in st["Action"] for r in st["Resource"]}
    assert {f"{raw}/raw", f"{raw}/raw/*"} <= reads
    assert not any(r in reads for r in (f"{raw}/*", f"{raw}/raw*"))


def test_history_role_reads_only_the_event_logs() -> None:
    """The History Server's role (statically; tests/integration/test_eks_s3_policies.py runs a
    real History Server with it): it reads the objects under spark-events/ and the key
    "spark-events" S3A HEADs, lists the warehouse bucket without an s3:prefix condition (the
    HEAD of a missing key is a 403 otherwise), decrypts through S3, and writes nothing."""
    history = TF.document("history")["Statement"]
    bucket = TF.reference("aws_s3_bucket.warehouse.arn")
    assert TF.value("${local.event_log_prefix}") == "spark-events"
    by_action: dict[str, list[str]] = {}
    for st in history:
        assert st["Effect"] == "Allow"
        for action in st["Action"]:
            by_action.setdefault(action, []).extend(st["Resource"])
    assert set(by_action) == {"s3:ListBucket", "s3:GetObject", "kms:Decrypt"}
    assert by_action["s3:ListBucket"] == [bucket]
    assert by_action["s3:GetObject"] == [f"{bucket}/spark-events", f"{bucket}/spark-events/*"]
    [listing] = [st for st in history if "s3:ListBucket" in st["Action"]]
    assert "Condition" not in listing
    [kms] = [st for st in history if "kms:Decrypt" in st["Action"]]
    assert kms["Resource"] == [TF.identifiers["aws_kms_key.data.arn"]]
    assert kms["Condition"] == {"StringEquals": {"kms:ViaService": ["s3.eu-west-1.amazonaws.com"]}}


def test_event_log_directory_marker() -> None:
    """S3A opens the event-log prefix as a directory: Terraform writes its zero-byte marker
    "spark-events/" into the warehouse bucket, encrypted with the data key, so the first
    driver and the History Server find it."""
    marker = resources("aws_s3_object")["event_log_dir"]
    assert marker["bucket"] == "${aws_s3_bucket.warehouse.id}"
    assert TF.value(marker["key"]) == "spark-events/"
    assert marker.get("content", "") == "" and "source" not in marker
    assert "content_base64" not in marker
    assert marker["kms_key_id"] == "${aws_kms_key.data.arn}"
    # The marker, the role's prefix and the chart's eventLog.dir are one prefix.
    prefix = TF.value(marker["key"]).rstrip("/")
    assert TF.value("${local.event_log_uri}") == f"s3a://{TF.bucket_name('warehouse')}/{prefix}"


def test_db_secret_refresh_is_bounded() -> None:
    """Defect 2, the Terraform side: External Secrets re-reads the rotated RDS secret often
    enough to bound the outage (at most 60m, default 5m), and the value reaches the chart."""
    var = dict(blocks("variable"))["metastore_db_creds_refresh_interval"]
    pattern = re.search(r'regex\("(.+?)",', str(var["validation"]))
    assert pattern, "refresh interval validation must be a regex"
    regex = re.compile(pattern.group(1).replace("\\\\", "\\"))
    for ok in ("1m", "5m", "15m", "60m"):
        assert regex.fullmatch(ok), ok
    for bad in ("2h", "90m", "0m", "1h30m", "24h", "30s"):
        assert not regex.fullmatch(bad), bad
    default = var["default"]
    assert regex.fullmatch(default) and int(default[:-1]) <= 15
    schema = json.loads((EKS / "charts/metastore-db-secret/values.schema.json").read_text())
    assert schema["properties"]["refreshInterval"]["pattern"] == pattern.group(1).replace(
        "\\\\", "\\"
    )
    rel = resources("helm_release")["metastore_db_secret"]
    assert "refreshInterval = var.metastore_db_creds_refresh_interval" in rel["values"][0]


def test_metastore_reads_db_credentials_from_mounted_files() -> None:
    """Defect 2, the chart side: a Secret in env is read once at container start; a Secret
    volume (without subPath) is updated in place by the kubelet after a rotation, which the
    image's entrypoint watches to restart the metastore JVM."""
    values = _values_eks("hive-metastore")
    docs = _render(
        REPO / "charts/hive-metastore",
        "hive-metastore",
        "metastore",
        "-f",
        str(REPO / "charts/hive-metastore/values-eks.yaml"),
    )
    [deploy] = [d for d in docs if d["kind"] == "Deployment"]
    pod = deploy["spec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if c["name"] == "metastore"]
    secret = values["database"]["existingSecret"]
    env_refs = [e for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
    assert not [e for e in env_refs if e["valueFrom"]["secretKeyRef"]["name"] == secret]
    volumes = {
        v["name"] for v in pod.get("volumes", []) if v.get("secret", {}).get("secretName") == secret
    }
    mounts = [m for m in container.get("volumeMounts", []) if m["name"] in volumes]
    assert mounts and all("subPath" not in m for m in mounts)


def _dependencies(address: str) -> tuple[set[str], bool]:
    """(resources `address` depends on, transitively; whether any of them, or it, has
    `depends_on = [module.eks]`). References to module.eks outputs (cluster_name...) wait
    only for those outputs, not for the node groups and add-ons."""
    types = {rtype for rtype, _, _ in typed_blocks("resource")}
    seen: set[str] = set()
    whole_module = False
    todo = [address]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        rtype, name = current.split(".", 1)
        body = resources(rtype).get(name, {})
        deps = [str(d) for d in as_list(body.get("depends_on"))]
        if "${module.eks}" in deps:
            whole_module = True
        text = str({k: v for k, v in body.items() if k != "depends_on"}) + " ".join(deps)
        for _ in range(4):  # locals may refer to locals
            for lname in re.findall(r"local\.(\w+)", text):
                if lname in locals_() and f"<local {lname}>" not in text:
                    text += f" <local {lname}> {locals_()[lname]}"
        for rtype_ref, rname in re.findall(r"\b([a-z][a-z0-9_]*)\.([a-z0-9_]+)\b", text):
            if rtype_ref in types and rname in resources(rtype_ref):
                todo.append(f"{rtype_ref}.{rname}")
    return seen, whole_module


def test_every_helm_release_waits_for_nodes_and_addons() -> None:
    """Defect 3: a release installed before the node groups and add-ons exist times out
    waiting for pods that have no node."""
    releases = resources("helm_release")
    assert set(releases) == AWS_RELEASES
    for name in releases:
        _, waits = _dependencies(f"helm_release.{name}")
        assert waits, f"helm_release.{name} does not depend on module.eks as a whole"
    for name in resources("kubernetes_namespace_v1"):
        assert _dependencies(f"kubernetes_namespace_v1.{name}")[1], name


def _node_groups() -> dict[str, tuple[dict[str, str], list[dict[str, str]]]]:
    """Node group -> (labels, taints in Kubernetes spelling), as eks.tf creates them."""
    effects = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute"}
    effects["PREFER_NO_SCHEDULE"] = "PreferNoSchedule"
    out = {}
    for name, group in dict(blocks("module"))["eks"]["eks_managed_node_groups"].items():
        labels = TF.data(group.get("labels", {}))
        taints = [
            {**t, "effect": effects[t["effect"]]} for t in TF.data(group.get("taints", {})).values()
        ]
        out[name] = (labels, taints)
    return out


def _schedulable_on(selector: dict[str, str], tolerations: list[dict[str, str]]) -> list[str]:
    def tolerated(taint: dict[str, str]) -> bool:
        for t in tolerations:
            if t.get("key") != taint["key"] or t.get("effect", taint["effect"]) != taint["effect"]:
                continue
            if t.get("operator", "Equal") == "Exists" or t.get("value") == taint["value"]:
                return True
        return False

    return [
        name
        for name, (labels, taints) in _node_groups().items()
        if selector.items() <= labels.items() and all(tolerated(t) for t in taints)
    ]


def test_eks_values_schedule_on_the_node_groups_terraform_creates() -> None:
    """Defect 4: charts/*/values-eks.yaml and helm.tf select node groups eks.tf creates
    (labels) and tolerate their taints, or executors stay Pending."""
    assert set(_node_groups()) == {"system", "spark"}
    logberg = _values_eks("logberg")["spark"]
    tf_logberg = TF.data(locals_()["logberg_values"]["spark"])
    tf_metastore = {k: locals_()["metastore_values"][k] for k in ("nodeSelector", "tolerations")}
    tf_operator = TF.data(locals_()["spark_operator_values"])
    tf_history = {"nodeSelector": locals_()["logberg_values"]["historyServer"]["nodeSelector"]}
    placements = {
        "values-eks executor": (logberg["executor"], ["spark"]),
        "values-eks driver": (logberg["driver"], ["system"]),
        "helm.tf executor": (tf_logberg["executor"], ["spark"]),
        "helm.tf history server": (TF.data(tf_history), ["system"]),
        "values-eks metastore": (_values_eks("hive-metastore"), ["system"]),
        "helm.tf metastore": (TF.data(tf_metastore), ["system"]),
        "helm.tf operator controller": (tf_operator["controller"], ["system"]),
        "helm.tf operator webhook": (tf_operator["webhook"], ["system"]),
    }
    for what, (spec, groups) in placements.items():
        selector = spec.get("nodeSelector") or {}
        assert selector, f"{what}: no nodeSelector"
        assert _schedulable_on(selector, spec.get("tolerations") or []) == groups, what
    assert logberg["executor"]["tolerations"] == tf_logberg["executor"]["tolerations"]


def test_eks_values_point_where_terraform_puts_things() -> None:
    """Defect 4: values-eks.yaml names the metastore Service, buckets and service accounts
    eks/ creates (placeholders only where the account id or endpoint is needed)."""
    logberg, metastore = _values_eks("logberg"), _values_eks("hive-metastore")
    tf = TF.data({k: locals_()[k] for k in ("metastore_uri", "landing_uri", "warehouse_uri")})
    assert logberg["metastore"]["uri"] == tf["metastore_uri"]

    def shape(uri: str) -> str:  # the bucket's prefix/purpose and the key, without account
        return re.sub(r"-\d{12}|-<account>", "-ACCOUNT", uri.replace("<prefix>", "logberg"))

    assert shape(logberg["landing"]["uri"]) == shape(tf["landing_uri"])
    assert shape(logberg["warehouse"]["uri"]) == shape(tf["warehouse_uri"])
    assert shape(metastore["warehouse"]["dir"]) == shape(tf["warehouse_uri"])
    variables = dict(blocks("variable"))
    assert logberg["serviceAccount"]["name"] == variables["spark_service_account"]["default"]
    assert metastore["serviceAccount"]["name"] == variables["metastore_service_account"]["default"]
    assert (
        metastore["database"]["existingSecret"] == variables["metastore_db_creds_name"]["default"]
    )
    for values in (logberg, metastore):
        assert values["serviceAccount"].get("annotations", {}) == {}, "Pod Identity: no IRSA"


# Checked 2026-11-23 (EKS release calendar, eks/README.md): versions past standard support
# cost $0.60 instead of $0.10 per cluster hour. 1.34's standard support ends 2026-12-02.
EXTENDED_OR_ENDING = {"1.31", "1.32", "1.33", "1.34"}


def test_kubernetes_version_defaults_to_standard_support() -> None:
    """Defect 5: the default is the newest version the validation admits and not one in
    (or days from) extended support; the upgrade policy does not silently extend."""
    var = dict(blocks("variable"))["kubernetes_version"]
    allowed = re.findall(r'"(1\.\d+)"', str(var["validation"]))
    assert allowed and var["default"] == max(allowed, key=lambda v: int(v.split(".")[1]))
    assert var["default"] not in EXTENDED_OR_ENDING
    assert not set(allowed) & {"1.29", "1.30", "1.31"}, "versions past extended support"
    eks = dict(blocks("module"))["eks"]
    assert eks["kubernetes_version"] == "${var.kubernetes_version}"
    assert eks["upgrade_policy"] == {"support_type": "${var.kubernetes_support_type}"}
    assert dict(blocks("variable"))["kubernetes_support_type"]["default"] == "STANDARD"


def test_api_endpoint_is_a_decision() -> None:
    """Defect 5: no 0.0.0.0/0 default; a private endpoint option; a plan that leaves no
    way in, or a public endpoint without CIDRs, fails naming the setting."""
    variables = dict(blocks("variable"))
    cidrs = variables["cluster_endpoint_public_access_cidrs"]
    assert "default" not in cidrs, "the public CIDRs must be a required decision"
    assert '"/0"' in str(cidrs["validation"]).replace("\\", "")
    assert variables["cluster_endpoint_private_access"]["type"] in ("bool", "${bool}")
    eks = dict(blocks("module"))["eks"]
    assert eks["endpoint_private_access"] == "${var.cluster_endpoint_private_access}"
    assert eks["endpoint_public_access_cidrs"] == "${var.cluster_endpoint_public_access_cidrs}"
    checks = str(dict(blocks("output"))["cluster_endpoint"].get("precondition"))
    assert "var.cluster_endpoint_private_access || var.cluster_endpoint_public_access" in checks
    assert "length(var.cluster_endpoint_public_access_cidrs) > 0" in checks
    example = (EKS / "terraform.tfvars.example").read_text()
    assert re.search(r"^cluster_endpoint_public_access_cidrs\s*=", example, re.M)


def test_pod_identity_only() -> None:
    """Defect 5: the module's default enable_irsa = true creates an IAM OIDC provider the
    design does not use; README and values files describe Pod Identity only."""
    assert dict(blocks("module"))["eks"].get("enable_irsa") is False
    readme = (EKS / "README.md").read_text()
    assert "enable_irsa = false" in readme
    for chart in ("logberg", "hive-metastore"):
        text = (REPO / "charts" / chart / "values-eks.yaml").read_text()
        assert "IRSA" not in text and "role-arn" not in text, chart


def test_only_metastore_pods_reach_postgres() -> None:
    """Defect 5: 5432 is admitted from the metastore pods' own security group (security
    groups for pods), not from the node group that every pod shares."""
    db_rules = [
        r
        for r in resources("aws_vpc_security_group_ingress_rule").values()
        if r["security_group_id"] == "${aws_security_group.metastore_db.id}"
    ]
    assert [r["referenced_security_group_id"] for r in db_rules] == [
        "${aws_security_group.metastore_pods.id}"
    ]
    assert "node_security_group_id" not in str(db_rules)
    eks = dict(blocks("module"))["eks"]
    cni = eks["addons"]["vpc-cni"]["configuration_values"]
    assert 'ENABLE_POD_ENI = "true"' in cni
    # standard: NetworkPolicies are enforced too, and strict cuts off the Pod Identity agent
    assert 'POD_SECURITY_GROUP_ENFORCING_MODE = "standard"' in cni
    assert 'enableNetworkPolicy = "true"' in cni
    policies = TF.data(eks["iam_role_additional_policies"])
    assert "arn:aws:iam::aws:policy/AmazonEKSVPCResourceController" in policies.values()
    # The SecurityGroupPolicy selects exactly the pods of the metastore release, which the
    # deploy flow installs under the name Terraform's labels assume.
    flow = (REPO / "jobs/platform/logberg_platform/k8s/deploy.py").read_text()
    # our_chart(name, ...) installs charts/<name> as the release <name>
    assert "self.release(\n            name,\n            chart," in flow
    release = re.search(r'self\.our_chart\(\s*"(hive-metastore)"', flow)
    assert release and release.group(1) == TF.value("${local.metastore_release_name}")
    rel = resources("helm_release")["metastore_pod_sg"]
    assert "securityGroupIds = [aws_security_group.metastore_pods.id]" in rel["values"][0]
    labels = TF.data(locals_()["metastore_pod_labels"])
    docs = _render(
        EKS / "charts/metastore-pod-sg",
        "metastore-pod-sg",
        "metastore",
        "--set-json",
        f"podLabels={json.dumps(labels)}",
        "--set-json",
        'securityGroupIds=["sg-0123456789abcdef0"]',
    )
    [sgp] = docs
    assert sgp["kind"] == "SecurityGroupPolicy"
    assert sgp["spec"]["podSelector"]["matchLabels"] == labels
    chart = _render(
        REPO / "charts/hive-metastore",
        TF.value("${local.metastore_release_name}"),
        "metastore",
        "-f",
        str(REPO / "charts/hive-metastore/values-eks.yaml"),
    )
    db_pods = {
        d["kind"]: d["spec"]["template"]["metadata"]["labels"]
        for d in chart
        if d["kind"] in ("Deployment", "Job")
    }
    assert set(db_pods) == {"Deployment", "Job"}
    for kind, pod_labels in db_pods.items():
        assert labels.items() <= pod_labels.items(), kind


def test_final_snapshot_name_is_unique_per_instance() -> None:
    """Defect 5: a fixed final_snapshot_identifier collides with the snapshot the previous
    destroy kept."""
    [db] = resources("aws_db_instance").values()
    ident = db["final_snapshot_identifier"]
    assert "time_static." in ident, ident
    [(name, stamp)] = resources("time_static").items()
    assert f"time_static.{name}.rfc3339" in ident
    assert "var.name" in str(stamp.get("triggers"))


LOCK_PLATFORMS = ("linux_amd64", "linux_arm64", "darwin_arm64")


def test_provider_lock_file_or_the_reason() -> None:
    """Defect 5: either a .terraform.lock.hcl with hashes for the three platforms, or
    eks/README.md says why not and how to create it."""
    lock = EKS / ".terraform.lock.hcl"
    if lock.exists():
        text = lock.read_text()
        for provider in ("aws", "helm", "kubernetes", "time"):
            assert f'provider "registry.terraform.io/hashicorp/{provider}"' in text
        assert text.count("h1:") >= 3 * 4
        return
    readme = (EKS / "README.md").read_text()
    assert ".terraform.lock.hcl" in readme
    command = re.search(r"providers lock ([^\n`]+)", readme)
    assert command, "README: the providers lock command"
    for platform in LOCK_PLATFORMS:
        assert f"-platform={platform}" in command.group(1)


# ---------------------------------------------------------------------------
# The registry and the values the deploy flow gets
# ---------------------------------------------------------------------------

ECR_TF = Renderer(identifiers={"data.aws_partition.current.dns_suffix": "amazonaws.com"})


def test_ecr_repositories_immutable_scanned_encrypted_bounded() -> None:
    from logberg_platform.k8s.deploy import DeploySettings

    [(name, repo)] = resources("aws_ecr_repository").items()
    keys_local = re.fullmatch(r"\$\{toset\(local\.(\w+)\)\}", repo["for_each"])
    assert keys_local, repo["for_each"]
    keys = locals_()[keys_local.group(1)]
    assert keys == _eks_mk_vars()["EKS_IMAGES"].split()  # what eks-push pushes
    # ecr_namespace (empty by default) prefixes the repositories and extends the registry
    # path the deploy flow gets; the renderer does not evaluate conditionals, so each case's
    # value of the two locals is given, after checking the expressions themselves.
    assert locals_()["ecr_prefix"] == '${var.ecr_namespace == "" ? "" : "${var.ecr_namespace}/"}'
    assert locals_()["ecr_image_registry"] == (
        '${var.ecr_namespace == "" ? local.ecr_registry : '
        '"${local.ecr_registry}/${var.ecr_namespace}"}'
    )
    host = ECR_TF.value("${local.ecr_registry}")
    assert host == "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
    for namespace in ("", "team-a/dev"):
        prefix = f"{namespace}/" if namespace else ""
        tf = Renderer(
            identifiers={
                **ECR_TF.identifiers,
                "local.ecr_prefix": prefix,
                "local.ecr_image_registry": f"{host}/{namespace}" if namespace else host,
            }
        )
        names = {tf.value(repo["name"].replace("${each.key}", k)) for k in keys}
        assert names == {
            f"{prefix}logberg-{k}" for k in ("spark", "hive-metastore", "spark-operator")
        }
        # ... which are the repositories the deploy flow names on EKS.
        registry = tf.value(dict(blocks("output"))["image_registry"]["value"])
        flow = DeploySettings(
            target="eks",
            namespace="spark-jobs",
            operator_namespace="spark-operator",
            repo=REPO,
            chart_cache=REPO,
            operator_chart_version="0",
            images={},
            image_registry=registry,
        )
        assert {flow.repository(k) for k in keys} == {f"{host}/{n}" for n in names}
    namespace_var = dict(blocks("variable"))["ecr_namespace"]
    assert namespace_var["default"] == "" and namespace_var["validation"]
    assert repo["image_tag_mutability"] == "IMMUTABLE"
    assert repo["image_scanning_configuration"] == [{"scan_on_push": True}]
    [enc] = repo["encryption_configuration"]
    assert enc == {"encryption_type": "KMS", "kms_key": "${aws_kms_key.data.arn}"}
    assert repo["force_delete"] == "${var.ecr_force_delete}"
    variables = dict(blocks("variable"))
    force = variables["ecr_force_delete"]
    assert force["type"] in ("bool", "${bool}") and force["default"] is False
    assert force["description"].strip()
    assert not resources("aws_ecr_repository_policy"), "no repository policy (no public pulls)"
    # Every repository has the lifecycle policy, which keeps a bounded number of images.
    [policy] = resources("aws_ecr_lifecycle_policy").values()
    assert policy["for_each"] == f"${{aws_ecr_repository.{name}}}"
    doc_name = re.fullmatch(
        r"\$\{data\.aws_ecr_lifecycle_policy_document\.(\w+)\.json\}", policy["policy"]
    )
    assert doc_name, policy["policy"]
    docs = {n: b for _, n, b in typed_blocks("data", "aws_ecr_lifecycle_policy_document")}
    [rule] = docs[doc_name.group(1)]["rule"]
    [selection] = rule["selection"]
    assert selection["tag_status"] == "any"
    assert selection["count_type"] == "imageCountMoreThan"
    assert selection["count_number"] == "${var.ecr_max_images}"
    assert rule.get("action", [{"type": "expire"}]) == [{"type": "expire"}]
    keep = variables["ecr_max_images"]
    assert 1 <= keep["default"] <= 1000
    assert "var.ecr_max_images <= 1000" in str(keep["validation"])


# The only attributes of AWS resources the values may carry: identifiers, never a credential.
# A value naming anything else (a password, a secret's value, a key) cannot be rendered.
VALUES_TF = Renderer(
    identifiers={
        "aws_db_instance.metastore.address": "logberg-metastore.c1.eu-west-1.rds.amazonaws.com",
        "aws_iam_role.metastore.arn": "arn:aws:iam::123456789012:role/logberg-metastore",
    }
)
TYPED_REFERENCES = {"${aws_db_instance.metastore.port}": 5432}
SECRET_NAMED = re.compile(r"password|secret|token|key", re.I)
# Keys that name a Secret or a key inside it (the metastore reads the password from there).
SECRET_REFERENCES = {"database.existingSecret", "database.usernameKey", "database.passwordKey"}


def _chart_values(release: str) -> dict[str, Any]:
    """chart_values[release] as Terraform's yamlencode would give it, for the default
    variables (numbers and bools stay numbers and bools)."""

    def value(node: Any) -> Any:
        if isinstance(node, dict):
            return {VALUES_TF.value(k): value(v) for k, v in node.items()}
        if isinstance(node, list):
            return [value(v) for v in node]
        if not isinstance(node, str):
            return node
        if node in TYPED_REFERENCES:
            return TYPED_REFERENCES[node]
        whole = re.fullmatch(r"\$\{\(?(var|local)\.(\w+)\)?\}", node)
        if whole and whole.group(1) == "local" and not isinstance(locals_()[whole.group(2)], str):
            return value(locals_()[whole.group(2)])
        if whole and whole.group(1) == "var":
            default = dict(blocks("variable"))[whole.group(2)]["default"]
            if not isinstance(default, str):
                return default
        return VALUES_TF.value(node)

    local_name = CHART_VALUES[release][0]
    return dict(value(locals_()[local_name]))


@pytest.mark.parametrize("release", sorted(CHART_VALUES))
def test_chart_values_carry_no_secret(release: str) -> None:
    values = _chart_values(release)
    for path in _leaf_paths(values):
        dotted = ".".join(path)
        leaf: Any = values
        for key in path:
            leaf = leaf[key]
        if SECRET_NAMED.search(path[-1]):
            assert dotted in SECRET_REFERENCES, f"{release}: {dotted}"
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", str(leaf)), dotted
        text = json.dumps(leaf)
        assert not re.search(r"AKIA[0-9A-Z]{16}|BEGIN [A-Z ]*PRIVATE KEY", text), dotted
    # Every key the chart needs was rendered (and so checked above).
    assert _top_paths(values, FREE_FORM) == CHART_VALUES[release][2]


def test_unrenderable_values_fail() -> None:
    """The renderer refuses a reference it was not given (e.g. a password attribute)."""
    from tests.eks_support.terraform import RenderError

    with pytest.raises(RenderError):
        VALUES_TF.value("${aws_db_instance.metastore.password}")


@pytest.mark.parametrize("release", SCHEMA_CHECKED)
def test_chart_values_files_render_with_values_eks(release: str, tmp_path: Path) -> None:
    """As the flow installs the chart on EKS: values-eks.yaml, the image it sets, then the
    file eks-values writes. The result renders against the chart's schema and none of
    values-eks.yaml's <...> placeholders is left."""
    import yaml

    chart = REPO / "charts" / release
    values_file = tmp_path / f"values-{release}.yaml"
    values_file.write_text(yaml.safe_dump(_chart_values(release)))
    namespace = dict(blocks("variable"))[
        "metastore_namespace" if release == "hive-metastore" else "spark_namespace"
    ]["default"]
    docs = _render(
        chart,
        release,
        namespace,
        f"--values={chart / 'values-eks.yaml'}",
        f"--set=image.repository=123456789012.dkr.ecr.eu-west-1.amazonaws.com/logberg-{release}",
        "--set=image.tag=0.1.0-0123456789ab",
        f"--values={values_file}",
    )
    assert docs
    text = yaml.safe_dump_all(docs)
    placeholder = r"(?:<|&lt;)(?:account|region|prefix|rds-endpoint)(?:>|&gt;)"  # XML too
    assert not re.findall(placeholder, text)
    if release == "hive-metastore":
        assert VALUES_TF.identifiers["aws_db_instance.metastore.address"] in text
    else:
        assert VALUES_TF.value("${local.landing_uri}") in text


# ---------------------------------------------------------------------------
# Amazon MSK (msk.tf, enable_msk): issue #57
# ---------------------------------------------------------------------------

MSK_TF = Renderer(
    identifiers={
        "aws_msk_cluster.logberg[0].arn": (
            "arn:aws:kafka:eu-west-1:123456789012:cluster/logberg-kafka/"
            "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab-2"
        ),
        "aws_msk_cluster.logberg[0].cluster_uuid": "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab-2",
    }
)
MSK_PREFIX = "arn:aws:kafka:eu-west-1:123456789012"
MSK_UUID = "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab-2"


def _msk_file() -> dict[str, Any]:
    return parsed(EKS / "msk.tf")


def _granted(document: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (action, resource) pair a rendered policy allows; no Deny, no condition."""
    pairs = set()
    for st in document["Statement"]:
        assert st["Effect"] == "Allow" and "Condition" not in st, st
        pairs |= {(a, r) for a in st["Action"] for r in st["Resource"]}
    return pairs


def test_msk_exists_only_when_enabled() -> None:
    """Every resource and data source of msk.tf is counted by enable_msk (off by default);
    the outputs are null without it."""
    variables = dict(blocks("variable"))
    assert variables["enable_msk"]["type"] in ("bool", "${bool}")
    assert variables["enable_msk"]["default"] is False
    assert locals_()["msk_count"] == "${var.enable_msk ? 1 : 0}"
    found = []
    for kind in ("resource", "data"):
        for entry in _msk_file().get(kind, []):
            for rtype, named in entry.items():
                for name, body in named.items():
                    found.append(f"{rtype}.{name}")
                    count = str(body.get("count", ""))
                    assert count == "${local.msk_count}" or count.startswith(
                        "${var.enable_msk && "
                    ), f"{rtype}.{name}: count {count!r}"
                    assert "for_each" not in body, f"{rtype}.{name}"
    assert {
        "aws_msk_cluster.logberg",
        "aws_kms_key.msk",
        "aws_security_group.msk",
        "aws_iam_role_policy.spark_msk",
        "aws_iam_role.msk_producer",
    } <= set(found)
    # Nothing about MSK anywhere else (an uncounted resource would exist without it).
    for path in TF_FILES:
        if path.name in ("msk.tf", "variables.tf", "outputs.tf"):
            continue
        assert "aws_msk_" not in path.read_text() and "msk" not in path.read_text(), path.name
    outputs = dict(blocks("output"))
    assert outputs["msk_bootstrap_brokers_sasl_iam"]["value"] == (
        "${one(aws_msk_cluster.logberg[*].bootstrap_brokers_sasl_iam)}"
    )
    assert outputs["msk_cluster_arn"]["value"] == "${one(aws_msk_cluster.logberg[*].arn)}"
    assert outputs["msk_topic"]["value"] == "${var.enable_msk ? var.msk_topic : null}"
    assert outputs["msk_producer_role_arn"]["value"] == "${one(aws_iam_role.msk_producer[*].arn)}"


def test_msk_iam_authentication_only() -> None:
    [cluster] = resources("aws_msk_cluster").values()
    [auth] = cluster["client_authentication"]
    assert auth["unauthenticated"] is False
    assert auth["sasl"] == [{"iam": True, "scram": False}]
    assert "tls" not in auth, "no mTLS clients"
    # The one port clients may use is the SASL/IAM listener's.
    assert locals_()["msk_iam_port"] == 9098


def test_msk_encrypted_in_transit_and_at_rest() -> None:
    [cluster] = resources("aws_msk_cluster").values()
    [enc] = cluster["encryption_info"]
    assert enc["encryption_in_transit"] == [{"client_broker": "TLS", "in_cluster": True}]
    assert enc["encryption_at_rest_kms_key_arn"] == "${aws_kms_key.msk[0].arn}"
    key = resources("aws_kms_key")["msk"]
    assert key["enable_key_rotation"] is True
    assert key["policy"] == "${data.aws_iam_policy_document.kms_msk[0].json}"
    # Broker logs (optional) go to a KMS-encrypted log group that expires.
    group = resources("aws_cloudwatch_log_group")["msk"]
    assert group["count"] == "${var.enable_msk && var.msk_broker_logs ? 1 : 0}"
    assert group["kms_key_id"] == "${aws_kms_key.data.arn}"
    assert group["retention_in_days"] == "${var.log_retention_days}"
    [logging] = cluster["dynamic"]
    assert logging["logging_info"]["for_each"] == "${var.msk_broker_logs ? [1] : []}"
    [logs] = logging["logging_info"]["content"][0]["broker_logs"][0]["cloudwatch_logs"]
    assert logs == {"enabled": True, "log_group": "${aws_cloudwatch_log_group.msk[0].name}"}


def test_msk_brokers_private_and_reached_from_the_nodes_only() -> None:
    [cluster] = resources("aws_msk_cluster").values()
    [nodes] = cluster["broker_node_group_info"]
    assert nodes["client_subnets"] == "${module.vpc.private_subnets}"
    assert nodes["security_groups"] == ["${aws_security_group.msk[0].id}"]
    assert nodes["connectivity_info"] == [{"public_access": [{"type": "DISABLED"}]}]
    assert "${var.msk_broker_count % var.az_count == 0}" in str(
        cluster["lifecycle"][0]["precondition"]
    )
    sg = "${aws_security_group.msk[0].id}"
    ingress = [
        r for r in resources("aws_vpc_security_group_ingress_rule").values()
        if r["security_group_id"] == sg
    ]  # fmt: skip
    assert ingress == [
        {
            "count": "${local.msk_count}",
            "security_group_id": sg,
            "description": ingress[0]["description"],
            "ip_protocol": "tcp",
            "from_port": "${local.msk_iam_port}",
            "to_port": "${local.msk_iam_port}",
            "referenced_security_group_id": "${module.eks.node_security_group_id}",
        }
    ]
    assert not [
        r for r in resources("aws_vpc_security_group_egress_rule").values()
        if r["security_group_id"] == sg
    ]  # fmt: skip
    assert not {"ingress", "egress"} & set(resources("aws_security_group")["msk"])
    assert not [r for r in resources("aws_security_group_rule").values() if "msk" in str(r)]


def test_spark_msk_policy_reads_the_one_topic_only() -> None:
    """The Spark role's MSK policy allows exactly: connecting to and describing the
    cluster, describing and reading the one topic, describing the lag probe's group."""
    [attached] = [p for n, p in resources("aws_iam_role_policy").items() if n == "spark_msk"]
    assert attached["role"] == "${aws_iam_role.spark.id}"
    assert attached["policy"] == "${data.aws_iam_policy_document.spark_msk[0].json}"
    cluster = MSK_TF.identifiers["aws_msk_cluster.logberg[0].arn"]
    topic = f"{MSK_PREFIX}:topic/logberg-kafka/{MSK_UUID}/nginx-access-logs"
    group = f"{MSK_PREFIX}:group/logberg-kafka/{MSK_UUID}/logberg-offsets"
    assert _granted(MSK_TF.document("spark_msk")) == {
        ("kafka-cluster:Connect", cluster),
        ("kafka-cluster:DescribeCluster", cluster),
        ("kafka-cluster:DescribeTopic", topic),
        ("kafka-cluster:ReadData", topic),
        ("kafka-cluster:DescribeGroup", group),
    }
    # The cluster's name is the one in the topic and group ARNs.
    [body] = resources("aws_msk_cluster").values()
    assert MSK_TF.value(body["cluster_name"]) == "logberg-kafka"
    # Another topic name moves the grant with it.
    other = Renderer(identifiers=MSK_TF.identifiers, overrides={"msk_topic": "edge.logs"})
    assert (
        "kafka-cluster:ReadData",
        f"{MSK_PREFIX}:topic/logberg-kafka/{MSK_UUID}/edge.logs",
    ) in _granted(other.document("spark_msk"))
    # No other Spark policy names kafka-cluster.
    for name in ("spark",):
        assert "kafka-cluster" not in json.dumps(TF.document(name))


def test_spark_msk_grants_follow_what_the_readers_do() -> None:
    """The group the policy names is the one consumer group a logberg reader uses (the lag
    probe's); the Spark source and KafkaLines assign and seek, never in a group."""
    code = (REPO / "jobs/logberg/lakehouse/kafka.py").read_text()
    groups = set(re.findall(r'"group\.id": "([^"]+)"', code))
    assert groups == {locals_()["msk_lag_group"]} == {"logberg-offsets"}
    lines = (REPO / "jobs/logberg/java/dev/logberg/KafkaLines.java").read_text()
    assert '"group.id"' not in lines and "subscribe(" not in lines and "commitSync" not in lines
    assert "consumer.assign(" in lines and '"enable.auto.commit", "false"' in lines
    job = (REPO / "jobs/logberg/pipeline/kafka/job.py").read_text()
    source = job.split("spark.readStream", 1)[1].split(".load()", 1)[0]
    assert "group.id" not in source and "commit" not in source  # groupIdPrefix: a name only


def test_msk_producer_role_is_separate_and_narrow() -> None:
    """The generator writes with its own role and service account; the Spark role never
    gets WriteData."""
    docs = {n: b for _, n, b in typed_blocks("data", "aws_iam_policy_document")}
    [trust] = statements(docs["msk_producer_trust"])
    conditions = {c["variable"]: c["values"] for c in trust["condition"]}
    assert conditions["aws:RequestTag/kubernetes-service-account"] == [
        "${var.generator_service_account}"
    ]
    assert conditions["aws:RequestTag/kubernetes-namespace"] == ["${var.spark_namespace}"]
    variables = dict(blocks("variable"))
    generator, spark = (
        variables[f"{k}_service_account"]["default"] for k in ("generator", "spark")
    )
    assert generator != spark
    cluster = MSK_TF.identifiers["aws_msk_cluster.logberg[0].arn"]
    topic = f"{MSK_PREFIX}:topic/logberg-kafka/{MSK_UUID}/nginx-access-logs"
    assert _granted(MSK_TF.document("msk_producer")) == {
        ("kafka-cluster:Connect", cluster),
        ("kafka-cluster:WriteDataIdempotently", cluster),
        ("kafka-cluster:DescribeTopic", topic),
        ("kafka-cluster:CreateTopic", topic),
        ("kafka-cluster:WriteData", topic),
    }
    assoc = resources("aws_eks_pod_identity_association")["msk_producer"]
    assert assoc["service_account"] == "${var.generator_service_account}"
    assert assoc["role_arn"] == "${aws_iam_role.msk_producer[0].arn}"
    assert resources("aws_iam_role_policy")["msk_producer"]["role"] == (
        "${aws_iam_role.msk_producer[0].id}"
    )


def test_msk_variables_validated() -> None:
    variables = dict(blocks("variable"))
    version = variables["msk_kafka_version"]
    allowed = re.findall(r'"(\d+\.\d+\.x)"', str(version["validation"]))
    assert version["default"] in allowed and "3.6.0" not in str(version["validation"])
    assert "% var.az_count" not in str(variables["msk_broker_count"]["validation"])
    assert variables["msk_broker_count"]["default"] % variables["az_count"]["default"] == 0
    assert variables["msk_broker_logs"]["default"] is True
    topic = variables["msk_topic"]
    assert re.fullmatch(r"[a-zA-Z0-9._-]{1,249}", topic["default"])
    assert "kafka" in variables["msk_broker_instance_type"]["default"]


def _msk_values_block() -> list[dict[str, Any]]:
    """The commented MSK `spark.env` of charts/logberg/values-eks.yaml, uncommented."""
    import yaml

    lines = (REPO / "charts/logberg/values-eks.yaml").read_text().splitlines()
    start = lines.index("  # env:")
    block = []
    for line in lines[start:]:
        if not line.startswith("  # "):
            break
        block.append("  " + line[len("  # ") :])
    return list(yaml.safe_load("spark:\n" + "\n".join(block))["spark"]["env"])


def test_values_eks_msk_block_selects_iam_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Uncommented, the block names the Terraform outputs to fill in, its options are the
    AWS_MSK_IAM set logberg accepts, `kafka:///` finds brokers and topic in it, and the
    chart renders it into the Spark pods' environment."""
    import yaml

    from logberg.lakehouse.kafka import parse_topic_uri
    from logberg.lakehouse.kafka_options import ClientOptions

    env = {e["name"]: e["value"] for e in _msk_values_block()}
    assert set(env) == {"LOGBERG_KAFKA_BOOTSTRAP", "LOGBERG_KAFKA_TOPIC", "LOGBERG_KAFKA_OPTIONS"}
    outputs = dict(blocks("output"))
    for name in ("LOGBERG_KAFKA_BOOTSTRAP", "LOGBERG_KAFKA_TOPIC"):
        placeholder = re.fullmatch(r"<(\w+)>", env[name])
        assert placeholder and placeholder.group(1) in outputs, env[name]
    options = ClientOptions.parse(env["LOGBERG_KAFKA_OPTIONS"])
    assert options.msk_iam
    assert options.jvm() == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "AWS_MSK_IAM",
        "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "kafka.sasl.client.callback.handler.class": (
            "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
        ),
    }
    brokers = "b-1.logberg-kafka.x1.c2.kafka.eu-west-1.amazonaws.com:9098"
    filled = {**env, "LOGBERG_KAFKA_BOOTSTRAP": brokers, "LOGBERG_KAFKA_TOPIC": "nginx-access-logs"}
    for k, v in filled.items():
        monkeypatch.setenv(k, v)
    source = parse_topic_uri("kafka:///", "--from")
    assert (source.bootstrap, source.topic) == (brokers, "nginx-access-logs")
    values = tmp_path / "msk.yaml"
    values.write_text(
        yaml.safe_dump({"spark": {"env": [{"name": k, "value": v} for k, v in filled.items()]}})
    )
    chart = REPO / "charts/logberg"
    docs = _render(
        chart,
        "logberg",
        "spark-jobs",
        f"--values={chart / 'values-eks.yaml'}",
        f"--values={values}",
        "--set=image.tag=0.1.0-0123456789ab",
    )
    apps = [d for d in docs if d["kind"] in ("SparkApplication", "ScheduledSparkApplication")]
    assert apps
    for app in apps:
        spec = app["spec"].get("template", app["spec"])
        for role in ("driver", "executor"):
            got = {e["name"]: e.get("value") for e in spec[role]["env"]}
            assert {k: got.get(k) for k in filled} == filled, (app["metadata"]["name"], role)


# An AWS provider unpacked on this machine (a filesystem mirror: <dir>/registry.terraform.io/
# hashicorp/aws/<version>/<os_arch>/); the registry is unreachable here.
PROVIDER_MIRROR = Path(os.environ.get("LOGBERG_TF_PROVIDER_MIRROR", "/opt/tf-plugins"))
MSK_STUB = """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "%(version)s" }
  }
}
provider "aws" { region = var.region }
module "vpc" { source = "./stub-vpc" }
module "eks" { source = "./stub-eks" }
resource "aws_kms_key" "data" { description = "stub of kms.tf's" }
resource "aws_iam_role" "spark" {
  name               = "stub-of-iam-tf"
  assume_role_policy = "{}"
}
"""


def test_msk_terraform_validate(tmp_path: Path) -> None:
    """`terraform validate` of msk.tf (with variables.tf, main.tf and the MSK outputs)
    against the AWS provider's schema, with the modules and the other files' resources it
    names stubbed: the one provider found on the machine, not necessarily versions.tf's."""
    exe = shutil.which("terraform") or shutil.which("tofu")
    versions = sorted(PROVIDER_MIRROR.glob("registry.terraform.io/hashicorp/aws/*/linux_amd64"))
    if exe is None or not versions:
        pytest.skip(f"terraform or an AWS provider under {PROVIDER_MIRROR} missing")
    version = versions[-1].parent.name
    for name in ("msk.tf", "variables.tf", "main.tf"):
        shutil.copy(EKS / name, tmp_path / name)
    outputs = (EKS / "outputs.tf").read_text()
    (tmp_path / "outputs.tf").write_text(outputs[outputs.index("# Amazon MSK (enable_msk") :])
    (tmp_path / "stub.tf").write_text(MSK_STUB % {"version": version})
    for module, names in {
        "vpc": ("vpc_id", "private_subnets"),
        "eks": ("node_security_group_id", "cluster_name"),
    }.items():
        (tmp_path / f"stub-{module}").mkdir()
        (tmp_path / f"stub-{module}" / "main.tf").write_text(
            "".join(f'output "{n}" {{ value = null }}\n' for n in names)
        )
    (tmp_path / "cli.tfrc").write_text(
        f'provider_installation {{\n  filesystem_mirror {{ path = "{PROVIDER_MIRROR}" }}\n}}\n'
    )
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(tmp_path / "cli.tfrc"),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    for args in (["init", "-backend=false", "-input=false"], ["validate", "-json"]):
        proc = subprocess.run(
            [exe, *args, "-no-color"], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["valid"] is True and result["error_count"] == 0, result
