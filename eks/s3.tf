# Three buckets: raw access logs (input), the Iceberg warehouse (output) and the S3
# server access logs of the other two. All: public access blocked, ACLs disabled
# (BucketOwnerEnforced), versioned, encrypted, TLS-only.

locals {
  data_buckets = {
    raw       = aws_s3_bucket.raw
    warehouse = aws_s3_bucket.warehouse
  }
  all_buckets = merge(local.data_buckets, { access_logs = aws_s3_bucket.access_logs })
}

resource "aws_s3_bucket" "raw" {
  #checkov:skip=CKV_AWS_144:Cross-region replication is a DR choice left to the operator; raw logs are re-shippable from the source.
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications: ingestion is scheduled (ScheduledSparkApplication).
  bucket        = local.raw_bucket_name
  force_destroy = var.force_destroy_buckets
}

resource "aws_s3_bucket" "warehouse" {
  #checkov:skip=CKV_AWS_144:Cross-region replication is a DR choice left to the operator (Iceberg tables can be rebuilt from raw logs).
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications for the warehouse.
  bucket        = local.warehouse_bucket_name
  force_destroy = var.force_destroy_buckets
}

resource "aws_s3_bucket" "access_logs" {
  #checkov:skip=CKV_AWS_18:This is the access-log target bucket; logging it into itself would loop.
  #checkov:skip=CKV_AWS_144:Cross-region replication of access logs is not required.
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications for access logs.
  #checkov:skip=CKV_AWS_145:S3 server access log delivery supports only SSE-S3 (AES256) on the target bucket, not SSE-KMS.
  bucket        = local.access_logs_bucket_name
  force_destroy = var.force_destroy_buckets
}

resource "aws_s3_bucket_public_access_block" "this" {
  for_each = local.all_buckets

  bucket                  = each.value.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "this" {
  for_each = local.all_buckets

  bucket = each.value.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "this" {
  for_each = local.all_buckets

  bucket = each.value.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "data" {
  for_each = local.data_buckets

  bucket = each.value.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.data.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_logging" "data" {
  for_each = local.data_buckets

  bucket        = each.value.id
  target_bucket = aws_s3_bucket.access_logs.id
  target_prefix = "${each.key}/"
}

# Raw logs: cheaper storage classes as they age, then deletion.
resource "aws_s3_bucket_lifecycle_configuration" "raw" {
  bucket = aws_s3_bucket.raw.id

  rule {
    id     = "raw-logs-age-out"
    status = "Enabled"

    filter {
      prefix = local.raw_prefix
    }

    transition {
      days          = var.raw_logs_lifecycle.transition_to_ia_days
      storage_class = "STANDARD_IA"
    }

    dynamic "transition" {
      for_each = var.raw_logs_lifecycle.transition_to_glacier_days > 0 ? [1] : []
      content {
        days          = var.raw_logs_lifecycle.transition_to_glacier_days
        storage_class = "GLACIER_IR"
      }
    }

    dynamic "expiration" {
      for_each = var.raw_logs_lifecycle.expiration_days > 0 ? [1] : []
      content {
        days = var.raw_logs_lifecycle.expiration_days
      }
    }
  }

  rule {
    id     = "housekeeping"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

# Warehouse: Iceberg expires its own snapshots; S3 only cleans up old versions and
# abandoned multipart uploads.
resource "aws_s3_bucket_lifecycle_configuration" "warehouse" {
  bucket = aws_s3_bucket.warehouse.id

  rule {
    id     = "housekeeping"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.noncurrent_version_expiration_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_lifecycle_configuration" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id

  rule {
    id     = "access-logs-age-out"
    status = "Enabled"

    filter {}

    expiration {
      days = var.log_retention_days
    }

    noncurrent_version_expiration {
      noncurrent_days = 7
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.this]
}

# The event-log directory's marker: S3A opens s3a://<warehouse bucket>/spark-events as a
# directory, which on S3 exists only if an object is under the prefix. Spark refuses to
# start a driver whose spark.eventLog.dir does not exist, and the History Server exits,
# so the prefix must exist before the first job. A zero-byte "spark-events/" is S3A's
# own directory marker (same content type); the drivers' event logs go below it.
resource "aws_s3_object" "event_log_dir" {
  bucket             = aws_s3_bucket.warehouse.id
  key                = "${local.event_log_prefix}/"
  content            = ""
  content_type       = "application/x-directory"
  kms_key_id         = aws_kms_key.data.arn
  bucket_key_enabled = true

  depends_on = [aws_s3_bucket_server_side_encryption_configuration.data]
}

# TLS only, on every bucket.
data "aws_iam_policy_document" "bucket_tls_only" {
  for_each = local.data_buckets

  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      each.value.arn,
      "${each.value.arn}/*",
    ]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

# The access-log bucket additionally admits the S3 logging service for the two data
# buckets of this account (ACLs are disabled, so delivery is granted by policy).
data "aws_iam_policy_document" "access_logs_bucket" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.access_logs.arn,
      "${aws_s3_bucket.access_logs.arn}/*",
    ]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }

  statement {
    sid       = "S3ServerAccessLogsDelivery"
    effect    = "Allow"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.access_logs.arn}/*"]

    principals {
      type        = "Service"
      identifiers = ["logging.s3.amazonaws.com"]
    }

    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = [for b in local.data_buckets : b.arn]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

resource "aws_s3_bucket_policy" "data" {
  for_each = local.data_buckets

  bucket = each.value.id
  policy = data.aws_iam_policy_document.bucket_tls_only[each.key].json

  depends_on = [aws_s3_bucket_public_access_block.this]
}

resource "aws_s3_bucket_policy" "access_logs" {
  bucket = aws_s3_bucket.access_logs.id
  policy = data.aws_iam_policy_document.access_logs_bucket.json

  depends_on = [aws_s3_bucket_public_access_block.this]
}
