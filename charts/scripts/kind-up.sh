#!/usr/bin/env bash
# A kind cluster named NAME from CONFIG on the pinned NODE_IMAGE, unless it exists
# (`make kind-up`, which then deploys to it).
#
#   KIND=kind kind-up.sh NAME CONFIG NODE_IMAGE
set -euo pipefail

kind=${KIND:-kind}
usage="usage: kind-up.sh NAME CONFIG NODE_IMAGE"
name=${1:?$usage}
config=${2:?$usage}
image=${3:?$usage (NODE_IMAGE: [kubernetes] kind_node_image of versions.toml)}

if "$kind" get clusters 2>/dev/null | grep -qx -- "$name"; then
  echo "kind cluster '$name' exists"
else
  "$kind" create cluster --name "$name" --config "$config" --image "$image" --wait 180s
fi
