# Amazon MSK (optional, var.enable_msk): a provisioned Kafka cluster for `logberg ingest
# --from kafka://...` on EKS. Brokers in the private subnets, no public access; IAM
# (SASL/IAM, port 9098) is the only client authentication: no unauthenticated, SCRAM or
# mTLS clients, no plaintext listener. TLS between clients and brokers and between brokers;
# storage encrypted with its own customer-managed key. The Spark role may read the one
# topic (iam.tf's role, the policy below); a separate producer role may write it.
# eks/README.md, "MSK", says what of it was never applied (there is no AWS here).

locals {
  msk_count        = var.enable_msk ? 1 : 0
  msk_cluster_name = "${var.name}-kafka"
  # The SASL/IAM listener: the only one the security group opens.
  msk_iam_port = 9098
  # The one consumer group a logberg reader uses: the lag probe's (logberg.lakehouse.kafka
  # end_offsets, librdkafka, which looks up its group's coordinator). Spark's Kafka source
  # and dev.logberg.KafkaLines assign partitions and seek: they never join a group or
  # commit, so no other group is granted.
  msk_lag_group = "logberg-offsets"
  # Replication within the brokers there are (2 zones: 2 brokers at least).
  msk_replication = min(3, var.msk_broker_count)
}

resource "aws_kms_key" "msk" {
  count = local.msk_count

  description             = "${var.name}: Amazon MSK storage encryption"
  enable_key_rotation     = true
  rotation_period_in_days = 365
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.kms_msk[0].json
}

resource "aws_kms_alias" "msk" {
  count = local.msk_count

  name          = "alias/${var.name}-msk"
  target_key_id = aws_kms_key.msk[0].key_id
}

# The root statement delegates to IAM: MSK uses the key through grants it creates with the
# permissions of whoever creates the cluster; no pod role names this key (clients never see
# encrypted storage).
data "aws_iam_policy_document" "kms_msk" {
  count = local.msk_count

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
}

resource "aws_security_group" "msk" {
  count = local.msk_count

  name        = "${var.name}-msk"
  description = "Amazon MSK brokers: SASL/IAM (9098) from the EKS nodes and their pods only"
  vpc_id      = module.vpc.vpc_id

  tags = {
    Name = "${var.name}-msk"
  }
}

# Spark drivers and executors (and every other pod but the metastore's) use the node
# security group; nothing else reaches the brokers, and only on the IAM listener.
resource "aws_vpc_security_group_ingress_rule" "msk_iam_from_nodes" {
  count = local.msk_count

  security_group_id            = aws_security_group.msk[0].id
  description                  = "Kafka SASL/IAM over TLS from the EKS nodes and pods"
  ip_protocol                  = "tcp"
  from_port                    = local.msk_iam_port
  to_port                      = local.msk_iam_port
  referenced_security_group_id = module.eks.node_security_group_id
}

resource "aws_msk_configuration" "logberg" {
  count = local.msk_count

  name           = "${local.msk_cluster_name}-config"
  kafka_versions = [var.msk_kafka_version]
  description    = "${var.name}: topics made on purpose only, replicated across the zones"

  # No topic appears because a client named it: the producer role creates the one topic
  # (kafka-cluster:CreateTopic on it alone).
  server_properties = <<-EOT
    auto.create.topics.enable=false
    default.replication.factor=${local.msk_replication}
    min.insync.replicas=${max(1, local.msk_replication - 1)}
  EOT
}

resource "aws_cloudwatch_log_group" "msk" {
  count = var.enable_msk && var.msk_broker_logs ? 1 : 0

  name              = "/aws/msk/${local.msk_cluster_name}/broker"
  retention_in_days = var.log_retention_days
  kms_key_id        = aws_kms_key.data.arn
}

resource "aws_msk_cluster" "logberg" {
  count = local.msk_count

  cluster_name           = local.msk_cluster_name
  kafka_version          = var.msk_kafka_version
  number_of_broker_nodes = var.msk_broker_count
  enhanced_monitoring    = "DEFAULT"

  broker_node_group_info {
    instance_type   = var.msk_broker_instance_type
    client_subnets  = module.vpc.private_subnets
    security_groups = [aws_security_group.msk[0].id]

    storage_info {
      ebs_storage_info {
        volume_size = var.msk_broker_volume_gib
      }
    }

    connectivity_info {
      public_access {
        type = "DISABLED"
      }
    }
  }

  # SASL/IAM only: every client signs in with its IAM identity (Pod Identity on EKS).
  client_authentication {
    unauthenticated = false

    sasl {
      iam   = true
      scram = false
    }
  }

  encryption_info {
    encryption_at_rest_kms_key_arn = aws_kms_key.msk[0].arn

    encryption_in_transit {
      client_broker = "TLS"
      in_cluster    = true
    }
  }

  configuration_info {
    arn      = aws_msk_configuration.logberg[0].arn
    revision = aws_msk_configuration.logberg[0].latest_revision
  }

  dynamic "logging_info" {
    for_each = var.msk_broker_logs ? [1] : []
    content {
      broker_logs {
        cloudwatch_logs {
          enabled   = true
          log_group = aws_cloudwatch_log_group.msk[0].name
        }
      }
    }
  }

  lifecycle {
    # MSK spreads brokers evenly over the client subnets: one per zone, or a multiple.
    precondition {
      condition     = var.msk_broker_count % var.az_count == 0
      error_message = "msk_broker_count must be a multiple of az_count (MSK puts the same number of brokers in each zone's private subnet)."
    }
  }
}

# ---------------------------------------------------------------------------
# The Spark role (iam.tf): read the one topic, nothing else. Connect to the cluster, and
# DescribeCluster (read-only cluster metadata: MSK pairs it with Connect for readers, though
# logberg's metadata and offset requests may not all need it; nothing here observed which),
# describe and read the topic (metadata, list offsets, fetch), and describe the lag probe's
# group. No WriteData, no CreateTopic, no Alter*: the lakehouse keeps the offsets
# (kafka_offsets and the checkpoint), never the broker.
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "spark_msk" {
  count = local.msk_count

  statement {
    sid       = "MskConnect"
    effect    = "Allow"
    actions   = ["kafka-cluster:Connect", "kafka-cluster:DescribeCluster"]
    resources = [aws_msk_cluster.logberg[0].arn]
  }

  statement {
    sid     = "MskReadTopic"
    effect  = "Allow"
    actions = ["kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"]
    resources = [
      "arn:${local.partition}:kafka:${var.region}:${local.account_id}:topic/${local.msk_cluster_name}/${aws_msk_cluster.logberg[0].cluster_uuid}/${var.msk_topic}",
    ]
  }

  statement {
    sid     = "MskLagProbeGroup"
    effect  = "Allow"
    actions = ["kafka-cluster:DescribeGroup"]
    resources = [
      "arn:${local.partition}:kafka:${var.region}:${local.account_id}:group/${local.msk_cluster_name}/${aws_msk_cluster.logberg[0].cluster_uuid}/${local.msk_lag_group}",
    ]
  }
}

resource "aws_iam_role_policy" "spark_msk" {
  count = local.msk_count

  name   = "logberg-spark-msk-read"
  role   = aws_iam_role.spark.id
  policy = data.aws_iam_policy_document.spark_msk[0].json
}

# ---------------------------------------------------------------------------
# The producer (the generator Job writing to the topic): its own role, for its own service
# account (var.generator_service_account in spark_namespace), so the Spark role stays
# read-only. Write the one topic (idempotently: librdkafka's enable.idempotence) and create
# it (auto.create.topics.enable is off). The logberg chart runs its generator Job with the
# Spark service account today; eks/README.md, "MSK", says what it needs to use this one.
# ---------------------------------------------------------------------------

data "aws_iam_policy_document" "msk_producer_trust" {
  count = local.msk_count

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
      values   = [var.spark_namespace]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:RequestTag/kubernetes-service-account"
      values   = [var.generator_service_account]
    }
  }
}

resource "aws_iam_role" "msk_producer" {
  count = local.msk_count

  name               = "${var.name}-msk-producer"
  description        = "logberg generator: write (and create) the one MSK topic, nothing else"
  assume_role_policy = data.aws_iam_policy_document.msk_producer_trust[0].json
}

data "aws_iam_policy_document" "msk_producer" {
  count = local.msk_count

  statement {
    sid       = "MskConnect"
    effect    = "Allow"
    actions   = ["kafka-cluster:Connect", "kafka-cluster:WriteDataIdempotently"]
    resources = [aws_msk_cluster.logberg[0].arn]
  }

  statement {
    sid    = "MskWriteTopic"
    effect = "Allow"
    actions = [
      "kafka-cluster:DescribeTopic",
      "kafka-cluster:CreateTopic",
      "kafka-cluster:WriteData",
    ]
    resources = [
      "arn:${local.partition}:kafka:${var.region}:${local.account_id}:topic/${local.msk_cluster_name}/${aws_msk_cluster.logberg[0].cluster_uuid}/${var.msk_topic}",
    ]
  }
}

resource "aws_iam_role_policy" "msk_producer" {
  count = local.msk_count

  name   = "logberg-msk-producer"
  role   = aws_iam_role.msk_producer[0].id
  policy = data.aws_iam_policy_document.msk_producer[0].json
}

resource "aws_eks_pod_identity_association" "msk_producer" {
  count = local.msk_count

  cluster_name    = module.eks.cluster_name
  namespace       = var.spark_namespace
  service_account = var.generator_service_account
  role_arn        = aws_iam_role.msk_producer[0].arn
}
