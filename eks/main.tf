data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_availability_zones" "available" {
  #checkov:skip=CKV_AWS_394:Only the first var.az_count zones (sorted by name) are used; a zone AWS adds later sorts after them and does not change the subnets.
  state = "available"

  filter {
    name   = "opt-in-status"
    values = ["opt-in-not-required"]
  }
}

locals {
  account_id   = data.aws_caller_identity.current.account_id
  partition    = data.aws_partition.current.partition
  cluster_name = var.name
  azs          = slice(data.aws_availability_zones.available.names, 0, var.az_count)

  # Subnet plan inside var.vpc_cidr (a /16 gives /20 private, /24 public and database
  # subnets; a /18 gives /22 and /26). Private subnets are large: the VPC CNI gives
  # every pod a VPC address.
  private_subnets  = [for i in range(var.az_count) : cidrsubnet(var.vpc_cidr, 4, i)]
  public_subnets   = [for i in range(var.az_count) : cidrsubnet(var.vpc_cidr, 8, 48 + i)]
  database_subnets = [for i in range(var.az_count) : cidrsubnet(var.vpc_cidr, 8, 52 + i)]

  # Node pools: the label every workload selects on, and the Spark taint.
  pool_label_key       = "logberg.io/pool"
  system_node_selector = { (local.pool_label_key) = "system" }
  spark_node_selector  = { (local.pool_label_key) = "spark" }
  spark_taint_key      = "logberg.io/spark"
  spark_tolerations = [{
    key      = local.spark_taint_key
    operator = "Equal"
    value    = "true"
    effect   = "NoSchedule"
  }]

  # Bucket names are globally unique: prefix + purpose + account id.
  raw_bucket_name         = "${var.bucket_prefix}-raw-${local.account_id}"
  warehouse_bucket_name   = "${var.bucket_prefix}-warehouse-${local.account_id}"
  access_logs_bucket_name = "${var.bucket_prefix}-access-logs-${local.account_id}"

  # Where the jobs read and write. Raw logs live under raw/ (the only prefix the Spark
  # role may read); the Iceberg warehouse under warehouse/. raw_dir is the key S3A HEADs
  # when it looks at the landing directory itself (s3a://<raw bucket>/raw).
  raw_dir       = "raw"
  raw_prefix    = "${local.raw_dir}/"
  landing_uri   = "s3a://${local.raw_bucket_name}/${local.raw_prefix}"
  warehouse_uri = "s3a://${local.warehouse_bucket_name}/warehouse"
  # Spark event logs: the drivers write them under this prefix of the warehouse bucket,
  # the History Server reads them (its role may read nothing else). S3A opens the
  # prefix as a directory: its marker object "<prefix>/" is in s3.tf.
  event_log_prefix = "spark-events"
  event_log_uri    = "s3a://${local.warehouse_bucket_name}/${local.event_log_prefix}"

  # In-cluster names.
  eso_namespace            = "external-secrets"
  eso_service_account      = "external-secrets"
  spark_operator_namespace = "spark-operator"
  metastore_release_name   = "hive-metastore"
  metastore_uri            = "thrift://${local.metastore_release_name}.${var.metastore_namespace}.svc.cluster.local:9083"

  tags = merge(var.tags, {
    "logberg.io/project" = var.name
    "managed-by"         = "terraform"
  })
}
