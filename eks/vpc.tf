# Private subnets carry the nodes and pods, database subnets the RDS instance; public
# subnets exist only for internet-facing load balancers and the NAT gateway(s).
module "vpc" {
  #checkov:skip=CKV_TF_1:Registry module pinned by version constraint (~> 6.6); registry sources cannot take a commit hash.
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 6.6"

  name = var.name
  cidr = var.vpc_cidr
  azs  = local.azs

  private_subnets  = local.private_subnets
  public_subnets   = local.public_subnets
  database_subnets = local.database_subnets

  create_database_subnet_group = true
  database_subnet_group_name   = "${var.name}-db"

  enable_dns_hostnames    = true
  enable_dns_support      = true
  map_public_ip_on_launch = false

  # NAT: one shared gateway (dev) or one per zone (prod).
  enable_nat_gateway     = true
  single_nat_gateway     = var.nat_mode == "single"
  one_nat_gateway_per_az = var.nat_mode == "per_az"

  # Lock down the default security group (nothing should use it).
  manage_default_security_group  = true
  default_security_group_ingress = []
  default_security_group_egress  = []

  enable_flow_log                                 = var.enable_vpc_flow_log
  create_flow_log_cloudwatch_log_group            = var.enable_vpc_flow_log
  create_flow_log_cloudwatch_iam_role             = var.enable_vpc_flow_log
  flow_log_max_aggregation_interval               = 60
  flow_log_cloudwatch_log_group_retention_in_days = var.log_retention_days
  flow_log_cloudwatch_log_group_kms_key_id        = aws_kms_key.data.arn

  # Load balancer placement: internet-facing in public, internal in private subnets.
  public_subnet_tags = {
    "kubernetes.io/role/elb" = "1"
  }
  private_subnet_tags = {
    "kubernetes.io/role/internal-elb" = "1"
  }
}
