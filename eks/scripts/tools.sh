#!/usr/bin/env bash
# `make eks-tools`: terraform (or tofu) and the AWS CLI are installed, and EKS_VARS (when
# set) exists; prints the versions found.
#
#   EKS_TF=terraform EKS_VARS=[file.tfvars] tools.sh
set -euo pipefail

if [ -z "${EKS_TF:-}" ]; then
  echo "error: neither terraform nor tofu is on PATH. Install Terraform >= 1.5.7 or OpenTofu >= 1.6" >&2
  echo '       (or point EKS_TF at the binary, e.g. make eks-up EKS_TF=$HOME/bin/tofu).' >&2
  exit 1
fi
command -v aws >/dev/null || {
  echo "error: the AWS CLI (aws) is not on PATH; the providers call 'aws eks get-token'." >&2
  exit 1
}
if [ -n "${EKS_VARS:-}" ] && [ ! -f "$EKS_VARS" ]; then
  echo "error: EKS_VARS=$EKS_VARS does not exist (start from eks/terraform.tfvars.example)." >&2
  exit 1
fi
echo "using $EKS_TF ($($EKS_TF version | head -n1)), aws $(aws --version 2>&1 | cut -d' ' -f1)"
