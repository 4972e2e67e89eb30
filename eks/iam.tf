# Pod Identity roles. Each trust policy admits only the EKS Pod Identity service, only
# for this account and cluster, and only for one namespace/service account (the
# session tags Pod Identity sets). Each permission policy names specific bucket ARNs,
# prefixes, the one KMS key and the one secret: no wildcards on resources.

locals {
  pod_identities = {
    spark = {
      namespace       = var.spark_namespace
      service_account = var.spark_service_account
      description     = "logberg Spark driver/executors: read raw/ logs, read/write the warehouse"
    }
    metastore = {
      namespace       = var.metastore_namespace
      service_account = var.metastore_service_account
      description     = "Hive Metastore: warehouse directories, read its RDS-managed DB secret"
    }
    history = {
      namespace       = var.spark_namespace
      service_account = var.history_service_account
      description     = "Spark History Server: read the event logs under spark-events/ of the warehouse, nothing else"
    }
    external_secrets = {
      namespace       = local.eso_namespace
      service_account = local.eso_service_account
      description     = "External Secrets Operator: may only assume the metastore role"
    }
  }
}

data "aws_iam_policy_document" "pod_identity_trust" {
  # The External Secrets role has its own document below (this one refers to it).
  for_each = { for k, v in local.pod_identities : k => v if k != "external_secrets" }

  statement {
    sid     = "EksPodIdentity"
    effect  = "Allow"
    actions = ["sts:AssumeRole", "sts:TagSession"]

    principals {
      type        = "Service"
      identifiers = ["pods.eks.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/eks-cluster-name"
      values   = [local.cluster_name]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-namespace"
      values   = [each.value.namespace]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-service-account"
      values   = [each.value.service_account]
    }
  }

  # The metastore role is also assumable by the External Secrets controller's role:
  # the SecretStore in the metastore namespace names this role, so the controller reads
  # the DB secret with the metastore's permissions and holds none of its own.
  dynamic "statement" {
    for_each = each.key == "metastore" ? [1] : []
    content {
      sid     = "ExternalSecretsChain"
      effect  = "Allow"
      actions = ["sts:AssumeRole", "sts:TagSession"]

      principals {
        type        = "AWS"
        identifiers = [aws_iam_role.external_secrets.arn]
      }
    }
  }
}

resource "aws_iam_role" "spark" {
  name               = "${var.name}-spark"
  description        = local.pod_identities.spark.description
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust["spark"].json
}

resource "aws_iam_role" "metastore" {
  name               = "${var.name}-metastore"
  description        = local.pod_identities.metastore.description
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust["metastore"].json
}

resource "aws_iam_role" "history" {
  name               = "${var.name}-history"
  description        = local.pod_identities.history.description
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust["history"].json
}

resource "aws_iam_role" "external_secrets" {
  name               = "${var.name}-external-secrets"
  description        = local.pod_identities.external_secrets.description
  assume_role_policy = data.aws_iam_policy_document.external_secrets_trust.json
}

data "aws_iam_policy_document" "external_secrets_trust" {
  statement {
    sid     = "EksPodIdentity"
    effect  = "Allow"
    actions = ["sts:AssumeRole", "sts:TagSession"]

    principals {
      type        = "Service"
      identifiers = ["pods.eks.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/eks-cluster-name"
      values   = [local.cluster_name]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-namespace"
      values   = [local.eso_namespace]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-service-account"
      values   = [local.eso_service_account]
    }
  }
}

# ---------------------------------------------------------------------------
# Spark: read raw/ in the raw bucket, read/write the warehouse bucket. The S3A
# permissions (Hadoop's "Restricting S3A operations through AWS Policies"): read needs
# s3:ListBucket on the bucket and s3:GetObject; write adds s3:PutObject, s3:DeleteObject,
# s3:AbortMultipartUpload and s3:ListBucketMultipartUploads.
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "spark" {
  # Unconditioned on purpose. S3A HEADs every path it probes (a directory, a file that
  # may not exist); a HEAD carries no s3:prefix, and S3 answers a missing key with 403
  # instead of 404 to a caller without s3:ListBucket, so a prefix condition here fails
  # the first probe with AccessDenied (tests/integration/test_eks_s3_policies.py). Key names in the
  # raw bucket become listable; reading stays limited to raw/ (ReadRawLogs).
  statement {
    sid       = "ListRawBucket"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.raw.arn]
  }

  statement {
    sid       = "BucketLocation"
    effect    = "Allow"
    actions   = ["s3:GetBucketLocation"]
    resources = [aws_s3_bucket.raw.arn, aws_s3_bucket.warehouse.arn]
  }

  # raw/* and the key "raw" itself: S3A's status probe of the landing directory
  # s3a://<raw bucket>/raw is a HEAD of "raw" (404: no such object, then it lists raw/);
  # without GetObject on that key the HEAD is a 403 and the ingest fails.
  statement {
    sid     = "ReadRawLogs"
    effect  = "Allow"
    actions = ["s3:GetObject", "s3:GetObjectVersion"]
    resources = [
      "${aws_s3_bucket.raw.arn}/${local.raw_dir}",
      "${aws_s3_bucket.raw.arn}/${local.raw_prefix}*",
    ]
  }

  statement {
    sid       = "ListWarehouse"
    effect    = "Allow"
    actions   = ["s3:ListBucket", "s3:ListBucketMultipartUploads"]
    resources = [aws_s3_bucket.warehouse.arn]
  }

  statement {
    sid    = "ReadWriteWarehouse"
    effect = "Allow"
    actions = [
      "s3:GetObject",
      "s3:PutObject",
      "s3:DeleteObject",
      "s3:AbortMultipartUpload",
      "s3:ListMultipartUploadParts",
    ]
    resources = ["${aws_s3_bucket.warehouse.arn}/*"]
  }

  statement {
    sid       = "DataKeyViaS3"
    effect    = "Allow"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${var.region}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "spark" {
  name   = "logberg-spark-data"
  role   = aws_iam_role.spark.id
  policy = data.aws_iam_policy_document.spark.json
}

# ---------------------------------------------------------------------------
# Hive Metastore: warehouse bucket (database/table directories) + its DB secret.
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "metastore" {
  statement {
    sid       = "ListWarehouse"
    effect    = "Allow"
    actions   = ["s3:ListBucket", "s3:GetBucketLocation"]
    resources = [aws_s3_bucket.warehouse.arn]
  }

  statement {
    sid       = "WarehouseDirectories"
    effect    = "Allow"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]
    resources = ["${aws_s3_bucket.warehouse.arn}/*"]
  }

  statement {
    sid       = "DataKeyViaS3"
    effect    = "Allow"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.data.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${var.region}.amazonaws.com"]
    }
  }

  statement {
    sid       = "ReadDbSecret"
    effect    = "Allow"
    actions   = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
    resources = [aws_db_instance.metastore.master_user_secret[0].secret_arn]
  }

  statement {
    sid       = "DecryptDbSecret"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.data.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["secretsmanager.${var.region}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "metastore" {
  name   = "logberg-metastore"
  role   = aws_iam_role.metastore.id
  policy = data.aws_iam_policy_document.metastore.json
}

# ---------------------------------------------------------------------------
# Spark History Server: read the event logs the drivers write under
# <warehouse bucket>/spark-events/ (local.event_log_prefix), nothing else. No write or
# delete: the chart's cleaner (historyServer.cleanerMaxAge) is off by default, and
# event-log compaction (spark.history.fs.eventLog.rolling.maxFilesToRetain) is not set.
# No s3:GetBucketLocation: the chart gives S3A the region (s3.region).
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "history" {
  # Unconditioned, like Spark's ListRawBucket, and for the same reason. Tried against the
  # enforcing MinIO (tests/integration/test_eks_s3_policies.py, a real History Server)
  # with s3:prefix limited to "spark-events" and "spark-events/*": the server exits at
  # start with AccessDeniedException (getFileStatus on s3a://<bucket>/spark-events).
  # S3A's status probe of the log directory is a HEAD of the key "spark-events" (no such
  # object; it then lists "spark-events/"); a HEAD carries no s3:prefix, so the
  # conditioned ListBucket does not count and S3 answers the missing key with 403, not
  # 404. Unconditioned, the server starts and lists the applications. The cost: key
  # names in the whole warehouse bucket (table and data file names) become listable;
  # their contents stay unreadable (ReadEventLogs is the only GetObject).
  statement {
    sid       = "ListWarehouse"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [aws_s3_bucket.warehouse.arn]
  }

  # spark-events/* and the key "spark-events" itself: without GetObject on that key, the
  # HEAD of S3A's directory probe is a 403 whatever ListBucket allows (tried too: the
  # server exits as above). Not "spark-events*": that would match spark-events-x/....
  statement {
    sid     = "ReadEventLogs"
    effect  = "Allow"
    actions = ["s3:GetObject"]
    resources = [
      "${aws_s3_bucket.warehouse.arn}/${local.event_log_prefix}",
      "${aws_s3_bucket.warehouse.arn}/${local.event_log_prefix}/*",
    ]
  }

  # The warehouse bucket is SSE-KMS: reading needs Decrypt (never GenerateDataKey: no
  # writes), through S3 only.
  statement {
    sid       = "DataKeyViaS3"
    effect    = "Allow"
    actions   = ["kms:Decrypt"]
    resources = [aws_kms_key.data.arn]

    condition {
      test     = "StringEquals"
      variable = "kms:ViaService"
      values   = ["s3.${var.region}.amazonaws.com"]
    }
  }
}

resource "aws_iam_role_policy" "history" {
  name   = "logberg-history-event-logs"
  role   = aws_iam_role.history.id
  policy = data.aws_iam_policy_document.history.json
}

# ---------------------------------------------------------------------------
# External Secrets controller: nothing but assuming the metastore role.
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "external_secrets" {
  statement {
    sid       = "AssumeMetastoreRole"
    effect    = "Allow"
    actions   = ["sts:AssumeRole", "sts:TagSession"]
    resources = [aws_iam_role.metastore.arn]
  }
}

resource "aws_iam_role_policy" "external_secrets" {
  name   = "logberg-external-secrets"
  role   = aws_iam_role.external_secrets.id
  policy = data.aws_iam_policy_document.external_secrets.json
}

# ---------------------------------------------------------------------------
# Pod Identity associations (the eks-pod-identity-agent add-on serves them).
# ---------------------------------------------------------------------------

resource "aws_eks_pod_identity_association" "spark" {
  cluster_name    = module.eks.cluster_name
  namespace       = var.spark_namespace
  service_account = var.spark_service_account
  role_arn        = aws_iam_role.spark.arn
}

resource "aws_eks_pod_identity_association" "metastore" {
  cluster_name    = module.eks.cluster_name
  namespace       = var.metastore_namespace
  service_account = var.metastore_service_account
  role_arn        = aws_iam_role.metastore.arn
}

resource "aws_eks_pod_identity_association" "history" {
  cluster_name    = module.eks.cluster_name
  namespace       = var.spark_namespace
  service_account = var.history_service_account
  role_arn        = aws_iam_role.history.arn
}

resource "aws_eks_pod_identity_association" "external_secrets" {
  cluster_name    = module.eks.cluster_name
  namespace       = local.eso_namespace
  service_account = local.eso_service_account
  role_arn        = aws_iam_role.external_secrets.arn
}
