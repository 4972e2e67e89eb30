#!/usr/bin/env bash
# `make eks-demo`: generate demo logs into EKS_DEMO_DIR, upload them to the raw bucket's
# raw/ prefix, then run the logberg release's scheduled jobs once (run-scheduled.sh; JOB...
# to pick some, else all of them, ingest first).
#
#   EKS_TF=terraform EKS_DIR=eks EKS_CONTEXT=logberg-eks LOGBERG=.venv/bin/logberg \
#     EKS_DEMO_DIR=dir DEMO_GENERATE_ARGS="--num-files 14 ..." demo.sh [JOB ...]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_setting EKS_CONTEXT "Set EKS_CONTEXT to the kube context to create (eks/eks.mk: logberg-eks)."
need_setting LOGBERG "Set LOGBERG to the logberg command (the root Makefile's \$(LOGBERG))."
need_setting EKS_DEMO_DIR "Set EKS_DEMO_DIR to the directory the demo logs are generated into."
read -r -a generate_args <<<"${DEMO_GENERATE_ARGS:-}"

region=$(tf output -raw region)
cluster=$(tf output -raw cluster_name)
raw=$(tf output -raw raw_bucket_name)
ns=$(tf output -raw spark_namespace)
aws eks update-kubeconfig --region "$region" --name "$cluster" --alias "$EKS_CONTEXT" >/dev/null
echo "==> generating demo logs into $EKS_DEMO_DIR"
rm -rf "$EKS_DEMO_DIR"
"$LOGBERG" generate --output "file://$EKS_DEMO_DIR" "${generate_args[@]}"
echo "==> uploading to s3://$raw/raw/"
aws s3 cp --recursive --only-show-errors --region "$region" "$EKS_DEMO_DIR" "s3://$raw/raw/"
echo "==> running the scheduled jobs once in namespace $ns"
"$EKS_DIR/scripts/run-scheduled.sh" "$ns" "$@"
echo
echo "Done. Inspect with: kubectl --context $EKS_CONTEXT get sparkapplications -n $ns"
