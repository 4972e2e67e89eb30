# PostgreSQL for the Hive Metastore: database subnets only, reachable on 5432 from the
# metastore pods only (security groups for pods), encrypted with the data key, master
# password generated and rotated by RDS in Secrets Manager (never in Terraform variables
# or state).

resource "aws_security_group" "metastore_db" {
  name        = "${var.name}-metastore-db"
  description = "Metastore PostgreSQL: 5432 from the metastore pods only"
  vpc_id      = module.vpc.vpc_id

  tags = {
    Name = "${var.name}-metastore-db"
  }
}

# Only the metastore pods reach the database. Every other pod shares its node's security
# group, so a rule admitting the node security group would admit every pod in the cluster;
# the metastore pods get their own group instead (security groups for pods: the VPC CNI's
# ENABLE_POD_ENI in eks.tf and the SecurityGroupPolicy of eks/charts/metastore-pod-sg,
# which selects the pods of the hive-metastore release, its schema Job included).
resource "aws_vpc_security_group_ingress_rule" "metastore_db_from_metastore_pods" {
  security_group_id            = aws_security_group.metastore_db.id
  description                  = "PostgreSQL from the hive-metastore pods (security groups for pods)"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = aws_security_group.metastore_pods.id
}

resource "aws_security_group" "metastore_pods" {
  #checkov:skip=CKV2_AWS_5:Attached to the metastore pods' branch ENIs by the VPC resource controller (SecurityGroupPolicy), not by Terraform.
  name        = "${var.name}-metastore-pods"
  description = "hive-metastore pods (security groups for pods): thrift in, database, DNS and AWS APIs out"
  vpc_id      = module.vpc.vpc_id

  tags = {
    Name = "${var.name}-metastore-pods"
  }
}

# Thrift clients (Spark drivers and executors, the spark-sql toolbox, the helm test) run
# with the node security group; kubelet probes come from the node too.
resource "aws_vpc_security_group_ingress_rule" "metastore_pods_thrift" {
  security_group_id            = aws_security_group.metastore_pods.id
  description                  = "Hive Metastore thrift from pods on the node security group"
  ip_protocol                  = "tcp"
  from_port                    = 9083
  to_port                      = 9083
  referenced_security_group_id = module.eks.node_security_group_id
}

resource "aws_vpc_security_group_egress_rule" "metastore_pods_db" {
  security_group_id            = aws_security_group.metastore_pods.id
  description                  = "PostgreSQL (the metastore database)"
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
  referenced_security_group_id = aws_security_group.metastore_db.id
}

resource "aws_vpc_security_group_egress_rule" "metastore_pods_dns" {
  for_each = toset(["tcp", "udp"])

  security_group_id            = aws_security_group.metastore_pods.id
  description                  = "DNS (CoreDNS runs on the node security group)"
  ip_protocol                  = each.key
  from_port                    = 53
  to_port                      = 53
  referenced_security_group_id = module.eks.node_security_group_id
}

resource "aws_vpc_security_group_egress_rule" "metastore_pods_aws_apis" {
  security_group_id = aws_security_group.metastore_pods.id
  description       = "HTTPS to S3 and STS (through the NAT gateway; no VPC endpoints)"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_vpc_security_group_egress_rule" "metastore_pods_pod_identity" {
  security_group_id = aws_security_group.metastore_pods.id
  description       = "EKS Pod Identity agent on the node (link-local)"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  cidr_ipv4         = "169.254.170.23/32"
}

locals {
  db_engine_major = split(".", var.db_engine_version)[0]
}

resource "aws_db_parameter_group" "metastore" {
  name_prefix = "${var.name}-metastore-pg${local.db_engine_major}-"
  family      = "postgres${local.db_engine_major}"
  description = "${var.name} metastore: TLS only, DDL and slow statement logging"

  parameter {
    name  = "rds.force_ssl"
    value = "1"
  }

  parameter {
    name  = "log_statement"
    value = "ddl"
  }

  parameter {
    name  = "log_min_duration_statement"
    value = "1000"
  }

  parameter {
    name  = "log_connections"
    value = "1"
  }

  parameter {
    name  = "log_disconnections"
    value = "1"
  }

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_iam_role" "rds_monitoring" {
  count = var.db_monitoring_interval > 0 ? 1 : 0

  name_prefix        = "${var.name}-rds-monitoring-"
  description        = "Enhanced Monitoring for the ${var.name} metastore database"
  assume_role_policy = data.aws_iam_policy_document.rds_monitoring_trust.json
}

data "aws_iam_policy_document" "rds_monitoring_trust" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["monitoring.rds.amazonaws.com"]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

resource "aws_iam_role_policy_attachment" "rds_monitoring" {
  count = var.db_monitoring_interval > 0 ? 1 : 0

  role       = aws_iam_role.rds_monitoring[0].name
  policy_arn = "arn:${local.partition}:iam::aws:policy/service-role/AmazonRDSEnhancedMonitoringRole"
}

# Created ahead of the instance so the exported PostgreSQL logs are KMS-encrypted and
# expire (RDS would otherwise create them unencrypted with no retention).
resource "aws_cloudwatch_log_group" "metastore_db" {
  for_each = toset(["postgresql", "upgrade"])

  name              = "/aws/rds/instance/${var.name}-metastore/${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.data.arn
}

resource "aws_db_instance" "metastore" {
  #checkov:skip=CKV_AWS_157:Multi-AZ is var.db_multi_az: off by default for dev cost, terraform.tfvars.example turns it on for prod.
  identifier     = "${var.name}-metastore"
  engine         = "postgres"
  engine_version = var.db_engine_version
  instance_class = var.db_instance_class

  db_name  = var.db_name
  username = var.db_username
  # RDS generates the password and stores (and rotates) it in Secrets Manager,
  # encrypted with the data key. Terraform never sees it.
  manage_master_user_password   = true
  master_user_secret_kms_key_id = aws_kms_key.data.arn

  allocated_storage     = var.db_allocated_storage_gib
  max_allocated_storage = var.db_max_allocated_storage_gib
  storage_type          = "gp3"
  storage_encrypted     = true
  kms_key_id            = aws_kms_key.data.arn

  db_subnet_group_name   = module.vpc.database_subnet_group_name
  vpc_security_group_ids = [aws_security_group.metastore_db.id]
  publicly_accessible    = false
  port                   = 5432
  multi_az               = var.db_multi_az
  parameter_group_name   = aws_db_parameter_group.metastore.name

  iam_database_authentication_enabled = var.db_iam_database_authentication

  backup_retention_period  = var.db_backup_retention_days
  backup_window            = "02:00-03:00"
  maintenance_window       = "sun:03:30-sun:04:30"
  copy_tags_to_snapshot    = true
  delete_automated_backups = false

  deletion_protection = var.db_deletion_protection
  skip_final_snapshot = var.db_skip_final_snapshot
  # Unique per instance: a fixed name collides with the snapshot the previous destroy left.
  final_snapshot_identifier = "${var.name}-metastore-final-${formatdate("YYYYMMDDhhmmss", time_static.metastore_db_created.rfc3339)}"

  auto_minor_version_upgrade  = true
  allow_major_version_upgrade = false
  apply_immediately           = false

  enabled_cloudwatch_logs_exports = ["postgresql", "upgrade"]

  performance_insights_enabled          = var.db_performance_insights
  performance_insights_kms_key_id       = var.db_performance_insights ? aws_kms_key.data.arn : null
  performance_insights_retention_period = var.db_performance_insights ? 7 : null

  monitoring_interval = var.db_monitoring_interval
  monitoring_role_arn = var.db_monitoring_interval > 0 ? aws_iam_role.rds_monitoring[0].arn : null

  depends_on = [aws_iam_role_policy_attachment.rds_monitoring, aws_cloudwatch_log_group.metastore_db]
}

# Created with the database (and destroyed with it): its timestamp names the final
# snapshot, so every create/destroy cycle leaves a differently named one.
resource "time_static" "metastore_db_created" {
  triggers = {
    identifier = "${var.name}-metastore"
  }
}
