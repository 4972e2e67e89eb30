# The registry `make eks-push` pushes the images to and the nodes pull them from. The
# deploy flow names an image <image_registry>/logberg-<key>:<content tag> (key: spark,
# hive-metastore, spark-operator); image_registry is the ECR host, plus ecr_namespace when
# set, so two stacks in one account and region keep apart. The tags are content hashes
# (logberg_platform.build.container_images), which is what makes immutable tags possible: changed
# inputs give a new tag, an unchanged image is never pushed over.
locals {
  ecr_images         = ["spark", "hive-metastore", "spark-operator"]
  ecr_registry       = "${local.account_id}.dkr.ecr.${var.region}.${data.aws_partition.current.dns_suffix}"
  ecr_prefix         = var.ecr_namespace == "" ? "" : "${var.ecr_namespace}/"
  ecr_image_registry = var.ecr_namespace == "" ? local.ecr_registry : "${local.ecr_registry}/${var.ecr_namespace}"
}

resource "aws_ecr_repository" "images" {
  for_each = toset(local.ecr_images)

  name                 = "${local.ecr_prefix}logberg-${each.key}"
  image_tag_mutability = "IMMUTABLE"
  force_delete         = var.ecr_force_delete

  image_scanning_configuration {
    scan_on_push = true
  }

  # The data key (kms.tf). ECR holds a grant on it for the repository, so the nodes'
  # role needs no KMS permission to pull.
  encryption_configuration {
    encryption_type = "KMS"
    kms_key         = aws_kms_key.data.arn
  }
}

# Every push is a new tag: keep the newest ecr_max_images images of each repository.
data "aws_ecr_lifecycle_policy_document" "images" {
  rule {
    priority    = 1
    description = "Keep the newest ${var.ecr_max_images} images"

    selection {
      tag_status   = "any"
      count_type   = "imageCountMoreThan"
      count_number = var.ecr_max_images
    }

    action {
      type = "expire"
    }
  }
}

resource "aws_ecr_lifecycle_policy" "images" {
  for_each = aws_ecr_repository.images

  repository = each.value.name
  policy     = data.aws_ecr_lifecycle_policy_document.images.json
}
