# The AWS-integration releases (var.install_charts): the namespaces, External Secrets and
# the two local charts in eks/charts. The platform's own releases (the spark-operator
# chart, charts/hive-metastore, charts/logberg) are not here: `make eks-deploy` installs
# them with the same `make k8s-deploy` flow kind uses, with the
# values below (output chart_values, written to files by `make eks-values`). They are
# yamlencoded so that tests/static/test_eks.py can check every key against the charts'
# values.schema.json. No value here is a credential: the metastore's password reaches
# its pod through External Secrets (see README.md, "Secret flow").
#
# Ordering: every release depends on module.eks as a whole (the node groups and the
# add-ons, CoreDNS and the VPC CNI included), not only on outputs such as the cluster
# name: `wait = true` would otherwise time out on pods that have no node yet.

locals {
  chart_count = var.install_charts ? 1 : 0

  # The hive-metastore chart's selector labels (every pod of the release carries them);
  # the deploy flow names the release hive-metastore too.
  metastore_pod_labels = {
    "app.kubernetes.io/name"     = "hive-metastore"
    "app.kubernetes.io/instance" = local.metastore_release_name
  }

  # Values of the releases the deploy flow installs (the flow sets image.repository and
  # image.tag itself, from IMAGE_REGISTRY and the images' content tags).
  metastore_values = {
    replicaCount = var.metastore_replicas
    database = {
      type           = "postgres"
      host           = aws_db_instance.metastore.address
      port           = aws_db_instance.metastore.port
      name           = var.db_name
      existingSecret = var.metastore_db_creds_name
      usernameKey    = "username"
      passwordKey    = "password"
      # The parameter group sets rds.force_ssl; the client insists on TLS too.
      jdbcParams = "sslmode=require"
    }
    warehouse = {
      dir = local.warehouse_uri
    }
    # The regional endpoint and its region: S3A (SDK v2) signs for the region it is given.
    s3 = {
      endpoint = "s3.${var.region}.amazonaws.com"
      region   = var.region
    }
    serviceAccount = {
      create = true
      name   = var.metastore_service_account
      # Informational only: Pod Identity binds the role by namespace/name, no
      # annotation is needed (unlike IRSA).
      annotations = {
        "logberg.io/pod-identity-role-arn" = aws_iam_role.metastore.arn
      }
    }
    # The chart's NetworkPolicy admits labelled client pods of its own namespace only
    # by default; the Spark jobs run in spark_namespace.
    networkPolicy = {
      clientNamespaceSelector = {
        matchExpressions = [{
          key      = "kubernetes.io/metadata.name"
          operator = "In"
          values   = [var.spark_namespace, var.metastore_namespace]
        }]
      }
    }
    nodeSelector = local.system_node_selector
    tolerations  = []
    resources = {
      requests = {
        cpu    = "250m"
        memory = "1Gi"
      }
      limits = {
        memory = "2Gi"
      }
    }
  }

  logberg_values = {
    metastore = {
      uri = local.metastore_uri
    }
    warehouse = {
      uri = local.warehouse_uri
    }
    landing = {
      uri = local.landing_uri
    }
    # The chart creates this service account (and the driver's Role/RoleBinding); Pod
    # Identity maps it to the Spark role, no annotation needed.
    serviceAccount = {
      create = true
      name   = var.spark_service_account
    }
    s3 = {
      region = var.region
    }
    spark = {
      executor = {
        nodeSelector = local.spark_node_selector
        tolerations  = local.spark_tolerations
      }
    }
    ingest = {
      enabled = var.logberg_ingest_enabled
    }
    analytics = {
      enabled = var.logberg_analytics_enabled
    }
    # Every driver logs its events under the prefix the history role may read (its
    # marker object is in s3.tf); the Spark role writes them (the warehouse bucket).
    eventLog = {
      enabled = true
      dir     = local.event_log_uri
    }
    # The History Server runs under its own service account, which Pod Identity maps to
    # the read-only history role (iam.tf); on the system nodes, like the metastore.
    historyServer = {
      enabled = var.history_server_enabled
      serviceAccount = {
        create = true
        name   = var.history_service_account
      }
      nodeSelector = local.system_node_selector
    }
  }

  # On top of charts/values/spark-operator.yaml: the operator watches the Spark jobs'
  # namespace (where the logberg release creates the Spark service account and the
  # driver's RBAC) and runs on the system node group.
  spark_operator_values = {
    spark = {
      jobNamespaces = [var.spark_namespace]
    }
    controller = {
      nodeSelector = local.system_node_selector
    }
    webhook = {
      nodeSelector = local.system_node_selector
    }
  }
}

resource "kubernetes_namespace_v1" "spark" {
  count = local.chart_count

  metadata {
    name = var.spark_namespace
    labels = {
      "app.kubernetes.io/part-of" = "logberg"
    }
  }

  depends_on = [module.eks]
}

resource "kubernetes_namespace_v1" "metastore" {
  count = local.chart_count

  metadata {
    name = var.metastore_namespace
    labels = {
      "app.kubernetes.io/part-of" = "logberg"
    }
  }

  depends_on = [module.eks]
}

# External Secrets Operator: turns the RDS-managed secret into a Kubernetes Secret.
resource "helm_release" "external_secrets" {
  count = local.chart_count

  name             = "external-secrets"
  repository       = "https://charts.external-secrets.io"
  chart            = "external-secrets"
  version          = var.eso_chart_version
  namespace        = local.eso_namespace
  create_namespace = true
  wait             = true
  timeout          = 600

  values = [yamlencode({
    installCRDs = true
    serviceAccount = {
      create = true
      name   = local.eso_service_account
    }
    nodeSelector = local.system_node_selector
    webhook = {
      nodeSelector = local.system_node_selector
    }
    certController = {
      nodeSelector = local.system_node_selector
    }
  })]

  depends_on = [module.eks, aws_eks_pod_identity_association.external_secrets]
}

# SecretStore + ExternalSecret (local chart in eks/charts): the ARN of the secret and
# the role to read it with are identifiers, not credentials.
resource "helm_release" "metastore_db_secret" {
  count = local.chart_count

  name      = "metastore-db-secret"
  chart     = "${path.module}/charts/metastore-db-secret"
  namespace = var.metastore_namespace

  values = [yamlencode({
    region           = var.region
    roleArn          = aws_iam_role.metastore.arn
    secretArn        = aws_db_instance.metastore.master_user_secret[0].secret_arn
    targetSecretName = var.metastore_db_creds_name
    refreshInterval  = var.metastore_db_creds_refresh_interval
  })]

  depends_on = [
    module.eks,
    helm_release.external_secrets,
    kubernetes_namespace_v1.metastore,
    aws_iam_role_policy.metastore,
    aws_iam_role_policy.external_secrets,
  ]
}

# SecurityGroupPolicy (local chart eks/charts/metastore-pod-sg): the pods of the
# hive-metastore release, its schema Job included, get the metastore pod security group,
# the only one RDS admits (rds.tf). It exists before `make eks-deploy` installs the
# metastore (`make eks-up` applies first): the VPC resource controller assigns groups
# when a pod is created.
resource "helm_release" "metastore_pod_sg" {
  count = local.chart_count

  name      = "metastore-pod-sg"
  chart     = "${path.module}/charts/metastore-pod-sg"
  namespace = var.metastore_namespace

  values = [yamlencode({
    podLabels        = local.metastore_pod_labels
    securityGroupIds = [aws_security_group.metastore_pods.id]
  })]

  depends_on = [module.eks, kubernetes_namespace_v1.metastore]
}
