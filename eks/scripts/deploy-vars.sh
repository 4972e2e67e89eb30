#!/usr/bin/env bash
# `make eks-deploy`, first half: point kubectl at the EKS cluster (context EKS_CONTEXT) and
# write the namespaces and the registry Terraform created to VARS_FILE, as the make
# assignments `make k8s-deploy K8S_TARGET=eks` then takes (K8S_NAMESPACE=... one a line).
#
#   EKS_TF=terraform EKS_DIR=eks EKS_CONTEXT=logberg-eks deploy-vars.sh VARS_FILE
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_setting EKS_CONTEXT "Set EKS_CONTEXT to the kube context to create (eks/eks.mk: logberg-eks)."
vars_file=${1:?usage: deploy-vars.sh VARS_FILE}

region=$(tf output -raw region)
cluster=$(tf output -raw cluster_name)
ns=$(tf output -raw spark_namespace)
metastore_ns=$(tf output -raw metastore_namespace)
operator_ns=$(tf output -raw spark_operator_namespace)
registry=$(tf output -raw image_registry)
echo "\$ aws eks update-kubeconfig --region $region --name $cluster --alias $EKS_CONTEXT"
aws eks update-kubeconfig --region "$region" --name "$cluster" --alias "$EKS_CONTEXT"
printf '%s\n' "K8S_NAMESPACE=$ns" "METASTORE_NAMESPACE=$metastore_ns" \
  "OPERATOR_NAMESPACE=$operator_ns" "IMAGE_REGISTRY=$registry" >"$vars_file"
