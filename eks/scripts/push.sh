#!/usr/bin/env bash
# `make eks-push`: build the shipped images (unchanged ones are skipped) and push each to ECR
# at its content tag, as <registry>/logberg-<key>:<tag>. A tag the registry has already is
# not pushed again (ECR tags are immutable). The registry password only goes through a pipe.
#
#   EKS_TF=terraform EKS_DIR=eks DOCKER=docker IMAGES="<image builder command>" push.sh IMAGE...
set -euo pipefail
source "$(dirname "$0")/lib.sh"

need_setting DOCKER "Install Docker with BuildKit or set DOCKER=/path/to/docker."
need_setting IMAGES "Set IMAGES to the image builder command (the root Makefile's \$(IMAGES))."
(($# > 0)) || { echo "usage: push.sh IMAGE... (the images eks/ecr.tf has a repository for: EKS_IMAGES)" >&2; exit 2; }
read -r -a images <<<"$IMAGES"

"$DOCKER" info >/dev/null 2>&1 || {
  echo "error: no Docker daemon answers ('$DOCKER info' failed): eks-push builds, tags and pushes" >&2
  echo "       the images with Docker. Start Docker, or set DOCKER=/path/to/docker." >&2
  exit 1
}
echo "$IMAGES build $*"
env "${images[@]}" build "$@"

region=$(tf output -raw region)
registry=$(tf output -raw image_registry)
host=${registry%%/*}
namespace=${registry#"$host"}
namespace=${namespace#/}
echo "\$ aws ecr get-login-password --region $region | $DOCKER login --username AWS --password-stdin $host"
aws ecr get-login-password --region "$region" | "$DOCKER" login --username AWS --password-stdin "$host"
for key in "$@"; do
  ref=$(env "${images[@]}" tag "$key")
  if aws ecr describe-images --region "$region" --repository-name "${namespace:+$namespace/}${ref%:*}" \
    --image-ids imageTag="${ref##*:}" >/dev/null 2>&1; then
    echo "$registry/$ref: in the registry already (tags are immutable)"
    continue
  fi
  echo "\$ $DOCKER tag $ref $registry/$ref && $DOCKER push $registry/$ref"
  "$DOCKER" tag "$ref" "$registry/$ref"
  "$DOCKER" push "$registry/$ref"
done
