terraform {
  # 1.5: check blocks, import blocks and the optional() defaults the modules rely on.
  required_version = ">= 1.5.7"

  required_providers {
    # terraform-aws-modules/eks 21.x and vpc 6.x need aws >= 6.28.
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.28"
    }
    # 3.x: the `kubernetes = { ... }` / `exec = { ... }` object syntax used in providers.tf.
    helm = {
      source  = "hashicorp/helm"
      version = "~> 3.1"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.37"
    }
    # time_static names the database's final snapshot (rds.tf); the EKS module needs this
    # provider anyway.
    time = {
      source  = "hashicorp/time"
      version = "~> 0.13"
    }
  }
}
