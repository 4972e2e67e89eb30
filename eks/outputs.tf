output "region" {
  description = "AWS region of the deployment."
  value       = var.region
}

output "cluster_name" {
  description = "Name of the EKS cluster."
  value       = module.eks.cluster_name
}

output "cluster_endpoint" {
  description = "Endpoint of the EKS API server."
  value       = module.eks.cluster_endpoint

  # Checked at plan time: the endpoint settings must leave a way in, and only on purpose.
  precondition {
    condition     = var.cluster_endpoint_private_access || var.cluster_endpoint_public_access
    error_message = "cluster_endpoint_private_access and cluster_endpoint_public_access are both false: nothing could reach the EKS API."
  }
  precondition {
    condition     = !var.cluster_endpoint_public_access || length(var.cluster_endpoint_public_access_cidrs) > 0
    error_message = "cluster_endpoint_public_access is true but cluster_endpoint_public_access_cidrs is empty: list your office/VPN egress CIDRs, or set cluster_endpoint_public_access = false."
  }
}

output "kubeconfig_command" {
  description = "Command that adds the cluster to your kubeconfig (uses your AWS credentials; nothing secret is stored)."
  value       = "aws eks update-kubeconfig --region ${var.region} --name ${module.eks.cluster_name}"
}

output "vpc_id" {
  description = "ID of the VPC."
  value       = module.vpc.vpc_id
}

output "private_subnet_ids" {
  description = "Private subnets (nodes and pods)."
  value       = module.vpc.private_subnets
}

output "raw_bucket_name" {
  description = "S3 bucket for raw nginx access logs (the jobs read the raw/ prefix)."
  value       = aws_s3_bucket.raw.id
}

output "warehouse_bucket_name" {
  description = "S3 bucket holding the Iceberg warehouse."
  value       = aws_s3_bucket.warehouse.id
}

output "access_logs_bucket_name" {
  description = "S3 bucket receiving the server access logs of the raw and warehouse buckets."
  value       = aws_s3_bucket.access_logs.id
}

output "landing_uri" {
  description = "URI the ingest job reads raw logs from."
  value       = local.landing_uri
}

output "warehouse_uri" {
  description = "URI of the Iceberg warehouse (Hive Metastore warehouse.dir)."
  value       = local.warehouse_uri
}

output "metastore_uri" {
  description = "In-cluster thrift URI of the Hive Metastore."
  value       = local.metastore_uri
}

output "rds_endpoint" {
  description = "Hostname of the metastore PostgreSQL instance (private; reachable from the EKS nodes only)."
  value       = aws_db_instance.metastore.address
}

output "rds_port" {
  description = "Port of the metastore PostgreSQL instance."
  value       = aws_db_instance.metastore.port
}

output "db_name" {
  description = "Name of the metastore database."
  value       = var.db_name
}

output "db_master_user_secret_arn" {
  description = "ARN of the RDS-managed Secrets Manager secret with the master credentials (the ARN only, not the value)."
  value       = aws_db_instance.metastore.master_user_secret[0].secret_arn
}

output "kms_key_arn" {
  description = "ARN of the KMS key encrypting the buckets, the database, its secret, the log groups and the ECR repositories."
  value       = aws_kms_key.data.arn
}

output "spark_role_arn" {
  description = "IAM role of the Spark service account (Pod Identity)."
  value       = aws_iam_role.spark.arn
}

output "metastore_role_arn" {
  description = "IAM role of the Hive Metastore service account (Pod Identity)."
  value       = aws_iam_role.metastore.arn
}

output "history_role_arn" {
  description = "IAM role of the Spark History Server's service account (Pod Identity); it may only read the event logs under spark-events/ of the warehouse bucket."
  value       = aws_iam_role.history.arn
}

output "external_secrets_role_arn" {
  description = "IAM role of the External Secrets controller (Pod Identity); it may only assume the metastore role."
  value       = aws_iam_role.external_secrets.arn
}

# What `make eks-deploy` hands the deploy flow (`make k8s-deploy K8S_TARGET=eks`).

output "image_registry" {
  description = "Where the logberg images live (<account>.dkr.ecr.<region>.amazonaws.com[/<ecr_namespace>]): `make eks-push` pushes there, the deploy flow's IMAGE_REGISTRY."
  value       = local.ecr_image_registry
}

output "ecr_repository_urls" {
  description = "URL of each ECR repository, by image key (spark, hive-metastore, spark-operator)."
  value       = { for key, repo in aws_ecr_repository.images : key => repo.repository_url }
}

output "spark_namespace" {
  description = "Namespace of the Spark jobs and the logberg release (the deploy flow's K8S_NAMESPACE)."
  value       = var.spark_namespace
}

output "metastore_namespace" {
  description = "Namespace of the Hive Metastore release (the deploy flow's METASTORE_NAMESPACE)."
  value       = var.metastore_namespace
}

output "spark_operator_namespace" {
  description = "Namespace of the Spark Operator release (the deploy flow's OPERATOR_NAMESPACE)."
  value       = local.spark_operator_namespace
}

# Identifiers and names only (the database host, bucket URIs, role ARN, the name of the
# Kubernetes Secret External Secrets writes): no credential is among them.
output "chart_values" {
  description = "Values files for the deploy flow's releases, by release name: YAML that `make eks-values` writes to .logberg/eks/values-<release>.yaml and `make eks-deploy` passes in K8S_VALUES (after charts/*/values-eks.yaml, so they replace its placeholders)."
  value = {
    "hive-metastore" = yamlencode(local.metastore_values)
    "logberg"        = yamlencode(local.logberg_values)
    "spark-operator" = yamlencode(local.spark_operator_values)
  }
}

# Amazon MSK (enable_msk; null when off).

output "msk_bootstrap_brokers_sasl_iam" {
  description = "MSK bootstrap brokers of the SASL/IAM listener (host:9098,...), for `ingest --from kafka://<these>/<msk_topic>`; null without enable_msk."
  value       = one(aws_msk_cluster.logberg[*].bootstrap_brokers_sasl_iam)
}

output "msk_topic" {
  description = "The topic the Spark role may read (and the producer role write); null without enable_msk."
  value       = var.enable_msk ? var.msk_topic : null
}

output "msk_cluster_arn" {
  description = "ARN of the MSK cluster; null without enable_msk."
  value       = one(aws_msk_cluster.logberg[*].arn)
}

output "msk_producer_role_arn" {
  description = "IAM role of the generator's service account (generator_service_account, Pod Identity): write and create msk_topic only; null without enable_msk."
  value       = one(aws_iam_role.msk_producer[*].arn)
}
