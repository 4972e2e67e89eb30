#!/usr/bin/env bash
# `make eks-down`: with EKS_CONFIRM=yes only, remove what the deploy flow installed (best
# effort), then terraform/tofu destroy everything eks-up created. TF_ARG... go to destroy
# (eks/eks.mk passes -var-file=... and EKS_TF_ARGS).
#
#   EKS_TF=terraform EKS_DIR=eks EKS_CONTEXT=logberg-eks EKS_CONFIRM=yes KUBECTL=kubectl \
#     HELM=helm down.sh [TF_ARG ...]
set -euo pipefail

if [ "${EKS_CONFIRM:-}" != "yes" ]; then
  echo "Refusing to destroy: this deletes the cluster, the database, the ECR repositories and" >&2
  echo "(if empty or force_destroy_buckets = true) the buckets. Re-run as: make eks-down EKS_CONFIRM=yes" >&2
  echo "With db_deletion_protection = true (the default), first apply with it set to false;" >&2
  echo "repositories holding images need ecr_force_delete = true applied first as well." >&2
  exit 1
fi
source "$(dirname "$0")/lib.sh"
need_setting EKS_CONTEXT "Set EKS_CONTEXT to the kube context to create (eks/eks.mk: logberg-eks)."
kubectl=${KUBECTL:-kubectl}
helm=${HELM:-helm}

# Best effort: remove Spark applications first so their finalizers and pods do not hold up
# the namespace deletion, then the releases `make eks-deploy` installed (not in Terraform's
# state), so the metastore pods let go of their security group before Terraform deletes it.
# Stops harmlessly when the cluster is already gone.
remove_releases() {
  local region cluster ns metastore_ns operator_ns release
  region=$(tf output -raw region 2>/dev/null) &&
    cluster=$(tf output -raw cluster_name 2>/dev/null) &&
    ns=$(tf output -raw spark_namespace 2>/dev/null) &&
    metastore_ns=$(tf output -raw metastore_namespace 2>/dev/null) &&
    operator_ns=$(tf output -raw spark_operator_namespace 2>/dev/null) &&
    aws eks update-kubeconfig --region "$region" --name "$cluster" --alias "$EKS_CONTEXT" >/dev/null 2>&1 ||
    return 1
  "$kubectl" --context "$EKS_CONTEXT" delete \
    scheduledsparkapplications.sparkoperator.k8s.io,sparkapplications.sparkoperator.k8s.io \
    --all -n "$ns" --ignore-not-found --timeout=5m || true
  for release in "logberg $ns" "hive-metastore $metastore_ns" "spark-operator $operator_ns"; do
    set -- $release
    "$helm" --kube-context "$EKS_CONTEXT" uninstall "$1" -n "$2" \
      --ignore-not-found --wait --timeout 10m || true
  done
}

echo "$EKS_TF -chdir=$EKS_DIR init -input=false"
tf init -input=false
remove_releases || echo "(the cluster does not answer: no releases to remove first)"
echo "$EKS_TF -chdir=$EKS_DIR destroy -input=false -auto-approve $*"
tf destroy -input=false -auto-approve "$@"
