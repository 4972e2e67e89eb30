module "eks" {
  #checkov:skip=CKV_TF_1:Registry module pinned by version constraint (~> 21.19); registry sources cannot take a commit hash.
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 21.19"

  name               = local.cluster_name
  kubernetes_version = var.kubernetes_version

  vpc_id                   = module.vpc.vpc_id
  subnet_ids               = module.vpc.private_subnets
  control_plane_subnet_ids = module.vpc.private_subnets

  # Standard support only by default (var.kubernetes_support_type): no silent switch to the
  # extended-support price when the version ages.
  upgrade_policy = {
    support_type = var.kubernetes_support_type
  }

  endpoint_private_access      = var.cluster_endpoint_private_access
  endpoint_public_access       = var.cluster_endpoint_public_access
  endpoint_public_access_cidrs = var.cluster_endpoint_public_access_cidrs

  # EKS Pod Identity only (iam.tf): no IAM OIDC provider, so no IRSA role can be bound to
  # a service account of this cluster.
  enable_irsa = false

  # Security groups for pods (the metastore's own group, rds.tf): the VPC resource
  # controller manages the trunk and branch ENIs with the cluster role.
  iam_role_additional_policies = {
    AmazonEKSVPCResourceController = "arn:${local.partition}:iam::aws:policy/AmazonEKSVPCResourceController"
  }

  # Kubernetes Secrets are envelope-encrypted with a KMS key the module creates
  # (create_kms_key defaults to true); control plane logs go to a log group encrypted
  # with the data key.
  enabled_log_types                      = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
  cloudwatch_log_group_retention_in_days = var.log_retention_days
  cloudwatch_log_group_kms_key_id        = aws_kms_key.data.arn

  # Access entries (API authentication mode): the identity running Terraform, plus
  # the admins listed in var.admin_principal_arns.
  authentication_mode                      = "API"
  enable_cluster_creator_admin_permissions = true
  access_entries = {
    for arn in var.admin_principal_arns : arn => {
      principal_arn = arn
      policy_associations = {
        cluster_admin = {
          policy_arn = "arn:${local.partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
          access_scope = {
            type = "cluster"
          }
        }
      }
    }
  }

  # No EBS CSI driver: nothing here needs persistent volumes (metadata lives in RDS,
  # data in S3; Spark scratch space is the node's encrypted root volume).
  addons = {
    vpc-cni = {
      before_compute = true
      configuration_values = jsonencode({
        # Enforce Kubernetes NetworkPolicies (the hive-metastore chart ships one).
        enableNetworkPolicy = "true"
        env = {
          # Security groups for pods: only the metastore pods reach RDS (rds.tf).
          ENABLE_POD_ENI = "true"
          # "standard", not "strict": required with NetworkPolicy enforcement, and strict
          # mode cuts pods with their own group off the node-local Pod Identity agent.
          POD_SECURITY_GROUP_ENFORCING_MODE = "standard"
        }
        init = {
          env = {
            # kubelet TCP probes of pods on branch ENIs.
            DISABLE_TCP_EARLY_DEMUX = "true"
          }
        }
      })
    }
    eks-pod-identity-agent = {
      before_compute = true
    }
    kube-proxy = {}
    coredns    = {}
  }

  # CoreDNS runs on the node security group; the metastore pods have their own (rds.tf).
  node_security_group_additional_rules = {
    metastore_pods_dns_tcp = {
      description              = "DNS from the hive-metastore pods (security groups for pods)"
      protocol                 = "tcp"
      from_port                = 53
      to_port                  = 53
      type                     = "ingress"
      source_security_group_id = aws_security_group.metastore_pods.id
    }
    metastore_pods_dns_udp = {
      description              = "DNS from the hive-metastore pods (security groups for pods)"
      protocol                 = "udp"
      from_port                = 53
      to_port                  = 53
      type                     = "ingress"
      source_security_group_id = aws_security_group.metastore_pods.id
    }
  }

  eks_managed_node_groups = {
    # On-demand nodes for the metastore, the operators and add-ons. No taint: anything
    # without a toleration lands here.
    system = {
      ami_type       = "AL2023_x86_64_STANDARD"
      instance_types = var.system_node_group.instance_types
      capacity_type  = "ON_DEMAND"
      subnet_ids     = module.vpc.private_subnets

      min_size     = var.system_node_group.min_size
      desired_size = var.system_node_group.desired_size
      max_size     = var.system_node_group.max_size

      labels = local.system_node_selector

      block_device_mappings = {
        root = {
          device_name = "/dev/xvda"
          ebs = {
            volume_size           = var.system_node_group.disk_size_gib
            volume_type           = "gp3"
            encrypted             = true
            delete_on_termination = true
          }
        }
      }
    }

    # Spot-capable nodes for Spark executors only: the taint keeps everything else off.
    spark = {
      ami_type       = "AL2023_x86_64_STANDARD"
      instance_types = var.spark_node_group.instance_types
      capacity_type  = var.spark_capacity_type
      subnet_ids     = module.vpc.private_subnets

      min_size     = var.spark_node_group.min_size
      desired_size = var.spark_node_group.desired_size
      max_size     = var.spark_node_group.max_size

      labels = local.spark_node_selector
      taints = {
        spark = {
          key    = local.spark_taint_key
          value  = "true"
          effect = "NO_SCHEDULE"
        }
      }

      block_device_mappings = {
        root = {
          device_name = "/dev/xvda"
          ebs = {
            volume_size           = var.spark_node_group.disk_size_gib
            volume_type           = "gp3"
            encrypted             = true
            delete_on_termination = true
          }
        }
      }
    }
  }
}
