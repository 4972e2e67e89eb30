#!/usr/bin/env bash
# Build the images the container and cluster tests run, when this machine has a container
# builder (docker with buildx, or podman); without one, say the container tests will be skipped.
#
#   IMAGES="<image builder command>" test-images.sh IMAGE...
#
# IMAGES is the root Makefile's $(IMAGES): [VAR=value ...] python -m <module>.
set -euo pipefail

: "${IMAGES:?set IMAGES to the image builder command (\$(IMAGES) of the root Makefile)}"
(($# > 0)) || { echo "usage: test-images.sh IMAGE..." >&2; exit 2; }
read -r -a images <<<"$IMAGES"

if env "${images[@]}" builder >/dev/null 2>&1; then
  env "${images[@]}" build "$@"
else
  echo "no container builder (docker with buildx, or podman): the container tests will be skipped"
fi
