# Every variable is typed and described; every variable that is not a plain bool is
# validated (tests/static/test_eks.py checks both).

# ---------------------------------------------------------------------------
# General
# ---------------------------------------------------------------------------

variable "region" {
  description = "AWS region to deploy into, e.g. eu-west-1."
  type        = string
  default     = "eu-west-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must look like an AWS region name, e.g. eu-west-1 or us-gov-west-1."
  }
}

variable "name" {
  description = "Name of the deployment: the EKS cluster name and the prefix of every named resource (RDS instance, IAM roles, security groups)."
  type        = string
  default     = "logberg"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name))
    error_message = "name must be 3-20 characters of lowercase letters, digits and hyphens, start with a letter and not end with a hyphen."
  }
}

variable "tags" {
  description = "Extra tags applied to every AWS resource (merged into the provider's default_tags)."
  type        = map(string)
  default     = {}

  validation {
    condition = alltrue([
      for k, v in var.tags : length(k) >= 1 && length(k) <= 128 && length(v) <= 256 && !startswith(lower(k), "aws:")
    ])
    error_message = "tag keys must be 1-128 characters and not start with aws:, tag values at most 256 characters."
  }
}

# ---------------------------------------------------------------------------
# Network
# ---------------------------------------------------------------------------

variable "vpc_cidr" {
  description = "IPv4 CIDR of the VPC. A /16 to /18; it is split into private (nodes, pods), public (load balancers only) and database subnets."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(regex("^[0-9.]+/(1[6-8])$", var.vpc_cidr)) && try(cidrhost(var.vpc_cidr, 0) == split("/", var.vpc_cidr)[0], false)
    error_message = "vpc_cidr must be a valid IPv4 network address with a prefix length of /16 to /18, e.g. 10.42.0.0/16."
  }
}

variable "az_count" {
  description = "Number of availability zones to spread subnets, nodes and the RDS subnet group over."
  type        = number
  default     = 3

  validation {
    condition     = var.az_count >= 2 && var.az_count <= 3 && floor(var.az_count) == var.az_count
    error_message = "az_count must be 2 or 3 (EKS and RDS subnet groups need at least two zones)."
  }
}

variable "nat_mode" {
  description = "NAT gateways for the private subnets: \"single\" (one shared NAT gateway, cheaper, for dev) or \"per_az\" (one per zone, survives a zone outage, for prod)."
  type        = string
  default     = "single"

  validation {
    condition     = contains(["single", "per_az"], var.nat_mode)
    error_message = "nat_mode must be \"single\" or \"per_az\"."
  }
}

variable "enable_vpc_flow_log" {
  description = "Send VPC flow logs to a KMS-encrypted CloudWatch log group."
  type        = bool
  default     = true
}

variable "log_retention_days" {
  description = "Retention of the CloudWatch log groups (EKS control plane, VPC flow logs, RDS logs), in days."
  type        = number
  default     = 365

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' allowed values (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)."
  }
}

# ---------------------------------------------------------------------------
# EKS
# ---------------------------------------------------------------------------

# The one place to change the Kubernetes minor: the default below (and, for a new minor,
# the list in its validation). Checked 2026-11-23 against the EKS release calendar: 1.36
# (EKS release 2026-06, standard support to about 2027-08) and 1.35 (to 2027-03-27) are in
# standard support; 1.34's ends 2026-12-02; 1.33 and 1.32 are in extended support, which
# costs $0.60 instead of $0.10 per cluster hour. eks/README.md, "Kubernetes version".
variable "kubernetes_version" {
  description = "Kubernetes minor version of the EKS control plane and node groups. Default: the newest in EKS standard support; 1.32-1.34 are in (or about to enter) extended support, which costs 6x per cluster hour."
  type        = string
  default     = "1.36"

  validation {
    condition     = contains(["1.32", "1.33", "1.34", "1.35", "1.36"], var.kubernetes_version)
    error_message = "kubernetes_version must be one of 1.32, 1.33, 1.34, 1.35, 1.36 (the versions EKS offers; 1.32-1.34 cost extended-support rates)."
  }
}

variable "kubernetes_support_type" {
  description = "EKS upgrade policy when the version leaves standard support: STANDARD (EKS upgrades the control plane to the next version, no extended-support charge) or EXTENDED (stays, at $0.60 instead of $0.10 per cluster hour)."
  type        = string
  default     = "STANDARD"

  validation {
    condition     = contains(["STANDARD", "EXTENDED"], var.kubernetes_support_type)
    error_message = "kubernetes_support_type must be STANDARD or EXTENDED."
  }
}

variable "cluster_endpoint_private_access" {
  description = "Serve the EKS API inside the VPC (nodes always use it when on). With cluster_endpoint_public_access = false, Terraform and kubectl must run from inside the VPC (VPN, bastion, peered network)."
  type        = bool
  default     = true
}

variable "cluster_endpoint_public_access" {
  description = "Expose the EKS API endpoint publicly (still IAM-authenticated, limited to cluster_endpoint_public_access_cidrs). Set false if you reach the VPC by VPN or a bastion."
  type        = bool
  default     = true
}

# Required: who may reach the public API endpoint is a decision, not a default. Use [] with
# cluster_endpoint_public_access = false.
variable "cluster_endpoint_public_access_cidrs" {
  description = "IPv4 CIDRs allowed to reach the public EKS API endpoint: your office/VPN egress addresses. Required; 0.0.0.0/0 is refused (set cluster_endpoint_public_access = false and use the private endpoint instead of opening it to everyone)."
  type        = list(string)

  validation {
    condition     = alltrue([for c in var.cluster_endpoint_public_access_cidrs : can(cidrnetmask(c)) && !endswith(c, "/0")])
    error_message = "cluster_endpoint_public_access_cidrs must be valid IPv4 CIDRs other than a /0, e.g. [\"203.0.113.0/24\"]."
  }
}

variable "admin_principal_arns" {
  description = "IAM role/user ARNs granted cluster-admin through EKS access entries, in addition to the identity that creates the cluster. Do not repeat the creator's ARN here."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.admin_principal_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$", a))])
    error_message = "each admin_principal_arns entry must be an IAM role or user ARN, e.g. arn:aws:iam::123456789012:role/platform-admin."
  }

  validation {
    condition     = length(distinct(var.admin_principal_arns)) == length(var.admin_principal_arns)
    error_message = "admin_principal_arns must not contain duplicates."
  }
}

variable "system_node_group" {
  description = "On-demand \"system\" node group (label logberg.io/pool=system): the metastore, the operators and cluster add-ons (Nitro types with trunk ENI support: the metastore pods use security groups for pods). There is no cluster autoscaler: desired_size is the node count at creation."
  type = object({
    instance_types = list(string)
    min_size       = number
    desired_size   = number
    max_size       = number
    disk_size_gib  = number
  })
  default = {
    instance_types = ["m6i.large"]
    min_size       = 2
    desired_size   = 2
    max_size       = 4
    disk_size_gib  = 50
  }

  validation {
    condition = (
      length(var.system_node_group.instance_types) > 0 &&
      alltrue([for t in var.system_node_group.instance_types : can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9]+$", t))]) &&
      var.system_node_group.min_size >= 1 &&
      var.system_node_group.min_size <= var.system_node_group.desired_size &&
      var.system_node_group.desired_size <= var.system_node_group.max_size &&
      var.system_node_group.max_size <= 50 &&
      var.system_node_group.disk_size_gib >= 20 && var.system_node_group.disk_size_gib <= 1000
    )
    error_message = "system_node_group: instance types like m6i.large, 1 <= min_size <= desired_size <= max_size <= 50, disk_size_gib 20-1000."
  }

  # The metastore pods get their own security group (security groups for pods), which needs
  # Nitro instances with trunk ENI support: not the burstable t family.
  validation {
    condition     = alltrue([for t in var.system_node_group.instance_types : !can(regex("^t[0-9]", t))])
    error_message = "system_node_group: t-family instance types do not support security groups for pods (the metastore's database access); use e.g. m6i.large."
  }
}

variable "spark_node_group" {
  description = "\"spark\" node group for Spark executors (label logberg.io/pool=spark, taint logberg.io/spark=true:NoSchedule). Several instance types of the same size improve Spot availability. There is no cluster autoscaler: desired_size is the node count at creation."
  type = object({
    instance_types = list(string)
    min_size       = number
    desired_size   = number
    max_size       = number
    disk_size_gib  = number
  })
  default = {
    instance_types = ["m6i.xlarge", "m6a.xlarge", "m5.xlarge", "m5a.xlarge"]
    min_size       = 0
    desired_size   = 2
    max_size       = 10
    disk_size_gib  = 100
  }

  validation {
    condition = (
      length(var.spark_node_group.instance_types) > 0 &&
      alltrue([for t in var.spark_node_group.instance_types : can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9]+$", t))]) &&
      var.spark_node_group.min_size >= 0 &&
      var.spark_node_group.min_size <= var.spark_node_group.desired_size &&
      var.spark_node_group.desired_size <= var.spark_node_group.max_size &&
      var.spark_node_group.max_size >= 1 && var.spark_node_group.max_size <= 200 &&
      var.spark_node_group.disk_size_gib >= 20 && var.spark_node_group.disk_size_gib <= 2000
    )
    error_message = "spark_node_group: instance types like m6i.xlarge, 0 <= min_size <= desired_size <= max_size (1-200), disk_size_gib 20-2000."
  }
}

variable "spark_capacity_type" {
  description = "Capacity type of the spark node group: SPOT (cheap, executors may be reclaimed; Spark retries lost tasks) or ON_DEMAND."
  type        = string
  default     = "SPOT"

  validation {
    condition     = contains(["SPOT", "ON_DEMAND"], var.spark_capacity_type)
    error_message = "spark_capacity_type must be SPOT or ON_DEMAND."
  }
}

# ---------------------------------------------------------------------------
# RDS PostgreSQL (Hive Metastore backend)
# ---------------------------------------------------------------------------

variable "db_engine_version" {
  description = "PostgreSQL engine version: a major version (\"16\": RDS picks the default minor and auto minor upgrades apply) or major.minor (\"16.8\")."
  type        = string
  default     = "16"

  validation {
    condition     = can(regex("^1[4-7](\\.[0-9]+)?$", var.db_engine_version))
    error_message = "db_engine_version must be a PostgreSQL major 14-17, optionally with a minor version, e.g. 16 or 16.8."
  }
}

variable "db_instance_class" {
  description = "RDS instance class of the metastore database."
  type        = string
  default     = "db.t4g.medium"

  validation {
    condition     = can(regex("^db\\.[a-z0-9]+\\.[a-z0-9]+$", var.db_instance_class))
    error_message = "db_instance_class must look like db.t4g.medium or db.m7g.large."
  }
}

variable "db_allocated_storage_gib" {
  description = "Initial gp3 storage of the metastore database, in GiB."
  type        = number
  default     = 20

  validation {
    condition     = var.db_allocated_storage_gib >= 20 && var.db_allocated_storage_gib <= 1000
    error_message = "db_allocated_storage_gib must be between 20 and 1000."
  }
}

variable "db_max_allocated_storage_gib" {
  description = "Upper bound for RDS storage autoscaling, in GiB (must be at least db_allocated_storage_gib; 0 disables autoscaling)."
  type        = number
  default     = 100

  validation {
    condition     = var.db_max_allocated_storage_gib == 0 || (var.db_max_allocated_storage_gib >= 20 && var.db_max_allocated_storage_gib <= 2000)
    error_message = "db_max_allocated_storage_gib must be 0 or between 20 and 2000."
  }
}

variable "db_name" {
  description = "Name of the PostgreSQL database that holds the metastore schema."
  type        = string
  default     = "metastore"

  validation {
    condition     = can(regex("^[a-z][a-z0-9_]{0,62}$", var.db_name))
    error_message = "db_name must start with a lowercase letter and contain only lowercase letters, digits and underscores (max 63)."
  }
}

variable "db_username" {
  description = "Master user name of the metastore database. Only the name: RDS generates the password and keeps it in Secrets Manager."
  type        = string
  default     = "hive"

  validation {
    condition     = can(regex("^[a-z][a-z0-9_]{0,62}$", var.db_username)) && !contains(["admin", "postgres", "rdsadmin", "user", "public"], var.db_username)
    error_message = "db_username must start with a lowercase letter, contain only lowercase letters, digits and underscores, and not be a reserved name."
  }
}

variable "db_multi_az" {
  description = "Run the metastore database Multi-AZ (a standby in another zone; doubles the instance cost). Recommended for prod."
  type        = bool
  default     = false
}

variable "db_backup_retention_days" {
  description = "Days RDS keeps automated backups (point-in-time recovery window)."
  type        = number
  default     = 7

  validation {
    condition     = var.db_backup_retention_days >= 1 && var.db_backup_retention_days <= 35 && floor(var.db_backup_retention_days) == var.db_backup_retention_days
    error_message = "db_backup_retention_days must be a whole number between 1 and 35."
  }
}

variable "db_deletion_protection" {
  description = "Protect the metastore database against deletion. Set false and apply before `make eks-down`."
  type        = bool
  default     = true
}

variable "db_skip_final_snapshot" {
  description = "Skip the final snapshot when the database is destroyed. Keep false unless the data is disposable."
  type        = bool
  default     = false
}

variable "db_iam_database_authentication" {
  description = "Enable IAM database authentication on the metastore database (the master password still works)."
  type        = bool
  default     = true
}

variable "db_performance_insights" {
  description = "Enable Performance Insights (7 days retention, free tier) on the metastore database."
  type        = bool
  default     = true
}

variable "db_monitoring_interval" {
  description = "Enhanced Monitoring interval in seconds (0 disables it)."
  type        = number
  default     = 60

  validation {
    condition     = contains([0, 1, 5, 10, 15, 30, 60], var.db_monitoring_interval)
    error_message = "db_monitoring_interval must be one of 0, 1, 5, 10, 15, 30, 60."
  }
}

# ---------------------------------------------------------------------------
# S3
# ---------------------------------------------------------------------------

variable "bucket_prefix" {
  description = "Prefix of the S3 bucket names: <prefix>-raw-<account id>, <prefix>-warehouse-<account id>, <prefix>-access-logs-<account id>."
  type        = string
  default     = "logberg"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{1,28}[a-z0-9]$", var.bucket_prefix)) && !can(regex("--", var.bucket_prefix)) && !startswith(var.bucket_prefix, "xn-")
    error_message = "bucket_prefix must be 3-30 characters of lowercase letters, digits and single hyphens, start and end with a letter or digit."
  }
}

variable "raw_logs_lifecycle" {
  description = "Lifecycle of the raw access logs: days until STANDARD_IA, days until GLACIER_IR (0 = never) and days until deletion (0 = never). Each later step must be at least 30 days after the previous one."
  type = object({
    transition_to_ia_days      = number
    transition_to_glacier_days = number
    expiration_days            = number
  })
  default = {
    transition_to_ia_days      = 30
    transition_to_glacier_days = 90
    expiration_days            = 365
  }

  validation {
    condition = (
      var.raw_logs_lifecycle.transition_to_ia_days >= 30 &&
      (var.raw_logs_lifecycle.transition_to_glacier_days == 0 || var.raw_logs_lifecycle.transition_to_glacier_days >= var.raw_logs_lifecycle.transition_to_ia_days + 30) &&
      (var.raw_logs_lifecycle.expiration_days == 0 || var.raw_logs_lifecycle.expiration_days >= max(var.raw_logs_lifecycle.transition_to_ia_days, var.raw_logs_lifecycle.transition_to_glacier_days) + 30)
    )
    error_message = "raw_logs_lifecycle: transition_to_ia_days >= 30; transition_to_glacier_days 0 or >= IA + 30; expiration_days 0 or >= the last transition + 30."
  }
}

variable "noncurrent_version_expiration_days" {
  description = "Days S3 keeps overwritten/deleted object versions (raw and warehouse buckets) before deleting them."
  type        = number
  default     = 30

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1 && var.noncurrent_version_expiration_days <= 3650
    error_message = "noncurrent_version_expiration_days must be between 1 and 3650."
  }
}

variable "force_destroy_buckets" {
  description = "Let `terraform destroy` delete non-empty buckets (all objects and versions are lost). Keep false outside throwaway environments."
  type        = bool
  default     = false
}

# ---------------------------------------------------------------------------
# Kubernetes workloads
# ---------------------------------------------------------------------------

variable "install_charts" {
  description = "Create the namespaces and install the AWS-integration releases (External Secrets Operator, the metastore DB secret sync, the metastore pods' SecurityGroupPolicy). The platform's releases (spark-operator, hive-metastore, logberg) are installed by `make eks-deploy`, not by Terraform. False creates only the AWS infrastructure."
  type        = bool
  default     = true
}

variable "eso_chart_version" {
  description = "Version of the External Secrets Operator chart (https://charts.external-secrets.io) that syncs the metastore's DB secret from Secrets Manager."
  type        = string
  default     = "2.9.0"

  validation {
    condition     = can(regex("^[0-9]+\\.[0-9]+\\.[0-9]+$", var.eso_chart_version))
    error_message = "eso_chart_version must be a semantic version such as 2.9.0."
  }
}

variable "spark_namespace" {
  description = "Namespace of the Spark jobs (SparkApplications, drivers, executors) and of the logberg release."
  type        = string
  default     = "spark-jobs"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.spark_namespace))
    error_message = "spark_namespace must be a DNS-1123 label."
  }
}

variable "spark_service_account" {
  description = "Service account of the Spark driver and executors (created with the driver's RBAC by the logberg chart; bound to the Spark IAM role by Pod Identity)."
  type        = string
  default     = "logberg-spark"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.spark_service_account))
    error_message = "spark_service_account must be a DNS-1123 label."
  }
}

variable "history_service_account" {
  description = "Service account of the Spark History Server in spark_namespace (created by the logberg chart, historyServer.serviceAccount; bound to the read-only history IAM role by Pod Identity)."
  type        = string
  default     = "logberg-history"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.history_service_account))
    error_message = "history_service_account must be a DNS-1123 label."
  }
}

variable "metastore_namespace" {
  description = "Namespace of the Hive Metastore release and its DB secret."
  type        = string
  default     = "metastore"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.metastore_namespace))
    error_message = "metastore_namespace must be a DNS-1123 label."
  }
}

variable "metastore_service_account" {
  description = "Service account of the Hive Metastore pods (bound to the metastore IAM role by Pod Identity)."
  type        = string
  default     = "hive-metastore"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.metastore_service_account))
    error_message = "metastore_service_account must be a DNS-1123 label."
  }
}

variable "metastore_db_creds_name" {
  description = "Name of the Kubernetes Secret (keys username, password) that External Secrets creates from the RDS-managed secret; the hive-metastore chart reads it via database.existingSecret. A name only, never a value."
  type        = string
  default     = "hive-metastore-db"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", var.metastore_db_creds_name))
    error_message = "metastore_db_creds_name must be a DNS-1123 subdomain."
  }
}

# After RDS rotates the password, new metastore connections fail until this refresh has
# copied it into the Kubernetes Secret and the metastore has restarted with it: this is the
# bound on that outage (eks/README.md, "Secret flow").
variable "metastore_db_creds_refresh_interval" {
  description = "How often External Secrets re-reads the RDS-managed secret, so a rotated password reaches the metastore: 1m to 60m (e.g. 5m). Each refresh is one Secrets Manager GetSecretValue (5m: about 8,600 calls, $0.04, a month)."
  type        = string
  default     = "5m"

  validation {
    condition     = can(regex("^([1-9]|[1-5][0-9]|60)m$", var.metastore_db_creds_refresh_interval))
    error_message = "metastore_db_creds_refresh_interval must be whole minutes from 1m to 60m, e.g. 5m."
  }
}

variable "metastore_replicas" {
  description = "Replicas of the Hive Metastore deployment (they share the database; the chart spreads them over zones)."
  type        = number
  default     = 2

  validation {
    condition     = var.metastore_replicas >= 1 && var.metastore_replicas <= 5
    error_message = "metastore_replicas must be between 1 and 5."
  }
}

variable "logberg_ingest_enabled" {
  description = "Enable the logberg chart's scheduled ingest job (raw logs to Iceberg)."
  type        = bool
  default     = true
}

variable "logberg_analytics_enabled" {
  description = "Enable the logberg chart's scheduled analytics job (the top-N tables)."
  type        = bool
  default     = true
}

variable "history_server_enabled" {
  description = "Deploy the logberg chart's Spark History Server (historyServer.enabled), which reads the jobs' event logs under s3a://<warehouse bucket>/spark-events with the read-only history role."
  type        = bool
  default     = true
}

# ---------------------------------------------------------------------------
# Container registry (ECR)
# ---------------------------------------------------------------------------

variable "ecr_max_images" {
  description = "Images each ECR repository (logberg-spark, logberg-hive-metastore, logberg-spark-operator) keeps; older ones expire. Every change to an image's inputs pushes a new tag."
  type        = number
  default     = 30

  validation {
    condition     = var.ecr_max_images >= 1 && var.ecr_max_images <= 1000 && floor(var.ecr_max_images) == var.ecr_max_images
    error_message = "ecr_max_images must be a whole number between 1 and 1000."
  }
}

variable "ecr_namespace" {
  description = "Namespace of the ECR repositories (<namespace>/logberg-spark, ...); empty: logberg-spark, ... at the registry's root. Set it (e.g. to var.name's value) for a second stack in the same account and region. Changing it on a stack creates new repositories: push again (make eks-push)."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^$|^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$", var.ecr_namespace))
    error_message = "ecr_namespace must be empty or lowercase path segments of letters and digits separated by '.', '_', '-' or '/' (ECR's repository name rules)."
  }
}

variable "ecr_force_delete" {
  description = "Let `terraform destroy` delete the ECR repositories while they still hold images (the images are lost). Keep false outside throwaway environments."
  type        = bool
  default     = false
}

# ---------------------------------------------------------------------------
# Amazon MSK (optional; msk.tf, eks/README.md "MSK")
# ---------------------------------------------------------------------------

variable "enable_msk" {
  description = "Create an Amazon MSK cluster for `logberg ingest --from kafka://...`: brokers in the private subnets, SASL/IAM clients only (port 9098), TLS in transit, KMS at rest; the Spark role may read var.msk_topic, a separate producer role may write it. Off by default (MSK bills per broker hour)."
  type        = bool
  default     = false
}

variable "msk_kafka_version" {
  description = "Apache Kafka version of the MSK cluster, as MSK names it (e.g. 3.8.x, MSK's recommended version when this was written; 3.7.x, 3.9.x and 4.0.x are also offered). logberg's clients are kafka-clients 3.9.1 and librdkafka, which talk to all of them."
  type        = string
  default     = "3.8.x"

  validation {
    condition     = contains(["3.7.x", "3.8.x", "3.9.x", "4.0.x"], var.msk_kafka_version)
    error_message = "msk_kafka_version must be one of 3.7.x, 3.8.x, 3.9.x, 4.0.x (MSK's supported versions without an end-of-support date, checked 2026-12-02)."
  }
}

variable "msk_broker_instance_type" {
  description = "MSK broker instance type (a kafka.* standard broker, e.g. kafka.m7g.large; kafka.t3.small is the cheapest, for dev, with low connection limits)."
  type        = string
  default     = "kafka.m7g.large"

  validation {
    condition     = can(regex("^kafka\\.(t3|m5|m7g)\\.[a-z0-9]+$", var.msk_broker_instance_type))
    error_message = "msk_broker_instance_type must be a standard MSK broker type: kafka.t3.small, kafka.m5.<size> or kafka.m7g.<size>."
  }
}

variable "msk_broker_count" {
  description = "Number of MSK brokers: a multiple of az_count (MSK puts the same number in each zone's private subnet; a plan checks it), 2 to 30."
  type        = number
  default     = 3

  validation {
    condition     = var.msk_broker_count >= 2 && var.msk_broker_count <= 30 && floor(var.msk_broker_count) == var.msk_broker_count
    error_message = "msk_broker_count must be a whole number between 2 and 30 (and a multiple of az_count)."
  }
}

variable "msk_broker_volume_gib" {
  description = "EBS storage of each MSK broker, in GiB."
  type        = number
  default     = 100

  validation {
    condition     = var.msk_broker_volume_gib >= 1 && var.msk_broker_volume_gib <= 16384 && floor(var.msk_broker_volume_gib) == var.msk_broker_volume_gib
    error_message = "msk_broker_volume_gib must be a whole number between 1 and 16384."
  }
}

variable "msk_broker_logs" {
  description = "Send the MSK brokers' logs to a CloudWatch log group (KMS-encrypted with the data key, log_retention_days)."
  type        = bool
  default     = true
}

variable "msk_topic" {
  description = "The Kafka topic logberg reads (`ingest --from kafka://<bootstrap>/<topic>`): the only topic the Spark role may read and the producer role may write and create."
  type        = string
  default     = "nginx-access-logs"

  validation {
    condition     = can(regex("^[a-zA-Z0-9._-]{1,249}$", var.msk_topic)) && !contains([".", ".."], var.msk_topic) && !startswith(var.msk_topic, "__")
    error_message = "msk_topic must be a Kafka topic name: 1-249 letters, digits, '.', '_' or '-', not \".\" or \"..\", not starting with \"__\" (Kafka's internal topics)."
  }
}

variable "generator_service_account" {
  description = "Service account in spark_namespace bound to the MSK producer role (Pod Identity): the generator Job's, when it writes to the topic. Not the Spark service account, which may only read."
  type        = string
  default     = "logberg-generator"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.generator_service_account))
    error_message = "generator_service_account must be a DNS-1123 label."
  }
}
