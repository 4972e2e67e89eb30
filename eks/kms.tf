# One customer-managed key for logberg's data at rest: both data buckets, the RDS
# storage, Performance Insights, the RDS-managed master secret, the CloudWatch log
# groups and the ECR repositories (ecr.tf). Access is delegated to IAM (the account root statement), so only principals
# whose IAM policies name this key ARN can use it; the pod roles in iam.tf do, scoped to
# the service they go through (kms:ViaService).
resource "aws_kms_key" "data" {
  description             = "${var.name}: S3, RDS, Secrets Manager, CloudWatch Logs and ECR encryption"
  enable_key_rotation     = true
  rotation_period_in_days = 365
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.kms_data.json
}

resource "aws_kms_alias" "data" {
  name          = "alias/${var.name}-data"
  target_key_id = aws_kms_key.data.key_id
}

# In a key policy, Resource "*" means "this key"; it cannot name anything else.
data "aws_iam_policy_document" "kms_data" {
  #checkov:skip=CKV_AWS_109:Key policy: "*" is this key only, and the root statement delegates to IAM (AWS default key policy).
  #checkov:skip=CKV_AWS_111:Key policy: "*" is this key only, and the root statement delegates to IAM (AWS default key policy).
  #checkov:skip=CKV_AWS_356:Key policy: Resource "*" always means the key the policy is attached to.
  statement {
    sid       = "EnableIAMPolicies"
    effect    = "Allow"
    actions   = ["kms:*"]
    resources = ["*"]

    principals {
      type        = "AWS"
      identifiers = ["arn:${local.partition}:iam::${local.account_id}:root"]
    }
  }

  statement {
    sid    = "AllowCloudWatchLogs"
    effect = "Allow"
    actions = [
      "kms:Encrypt",
      "kms:Decrypt",
      "kms:ReEncrypt*",
      "kms:GenerateDataKey*",
      "kms:Describe*",
    ]
    resources = ["*"]

    principals {
      type        = "Service"
      identifiers = ["logs.${var.region}.amazonaws.com"]
    }

    condition {
      test     = "ArnLike"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${var.region}:${local.account_id}:log-group:*"]
    }
  }
}
