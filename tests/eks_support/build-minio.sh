#!/usr/bin/env bash
# Build the MinIO that tests/integration/test_eks_s3_policies.py enforces eks/'s IAM policies with:
# the release pinned in jobs/logberg/versions.toml ([s3] minio) plus minio_missing_key.go
# (AWS's 403-for-a-missing-key rule), into
#   TOOLS/minio/<version>-<sha256 of minio_missing_key.go, 12 hex>/minio
# Idempotent: an existing build of the same version and rule is kept.
#
#   build-minio.sh TOOLS_DIR
#
# Sources: the Go module proxy only (`go mod download`, then `go build` in a writable copy,
# because the module cache is read-only and MinIO's package main needs the extra file).
# Go: `go` on PATH, else the toolchain `make setup` puts in TOOLS/go.
set -euo pipefail

tools=$(mkdir -p "${1:?usage: build-minio.sh TOOLS_DIR}" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
rule="$here/minio_missing_key.go"

python=$(command -v python3)
version=$("$python" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["s3"]["minio"])' \
  "$repo/jobs/logberg/versions.toml")
digest=$(sha256sum "$rule" | cut -c1-12)
out="$tools/minio/$version-$digest"
if [[ -x "$out/minio" ]]; then
  echo "minio $version (+ missing-key rule $digest) present: $out/minio"
  exit 0
fi

go=$(command -v go || true)
[[ -n "$go" ]] || go="$tools/go/bin/go"
if [[ ! -x "$go" ]]; then
  echo "error: no Go toolchain (go on PATH or $tools/go/bin/go); run \`make setup\` first" >&2
  exit 1
fi

# The machine's binary cache (as logberg_platform.build.binary_cache keeps the cluster's
# binaries): Go's cache holds compiled packages, not the linked MinIO, so a fresh clone copies
# a build of the same version, rule, script and Go from here instead of linking it again.
cache_root="${LOGBERG_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/logberg/builds}/minio"
cache="$cache_root/$({ cat "$0" "$rule"; echo "$version"; "$go" version; } | sha256sum | cut -c1-24)"
if [[ -x "$cache/minio" ]]; then
  mkdir -p "$out"
  cp "$cache/minio" "$out/minio.partial"
  mv "$out/minio.partial" "$out/minio"
  touch "$cache"
  echo "minio $version (+ missing-key rule $digest) from the machine's binary cache: $cache"
  exit 0
fi

# GOGC and the compiler's flags: the compiler's collector and no DWARF, as for logberg's own
# Go builds (build/tools.py, GO_BUILD_GOGC and GO_BUILD_GCFLAGS); -s -w as they link. This
# MinIO serves one test file's small requests and nothing else, so it is also compiled
# without optimisation or inlining (-N -l): a cold build took 250 core-s with them, 189
# without (102 s instead of 134 on an idle 2-core machine), and test_eks_s3_policies.py
# passed alike on both binaries (119 and 106 core-s, whole machine).
export CGO_ENABLED=0 GOTOOLCHAIN=auto GOFLAGS="-mod=readonly" GOGC="${GOGC:-400}"
gcflags="all=-dwarf=false -N -l"
mkdir -p "$tools/minio"
work=$(mktemp -d "$tools/minio/.build-XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

echo "==> go mod download github.com/minio/minio@$version"
src=$("$go" mod download -json "github.com/minio/minio@$version" |
  "$python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
cp -R "$src" "$work/src"
chmod -R u+w "$work/src"
cp "$rule" "$work/src/cmd/zz_logberg_missing_key.go"

echo "==> go build (MinIO $version + $(basename "$rule")); several minutes on a cold cache"
start=$SECONDS
(cd "$work/src" && "$go" build -trimpath -gcflags="$gcflags" -ldflags "-s -w" -o "$work/minio" .)
mkdir -p "$out" "$cache_root"
cp "$work/minio" "$cache_root/.minio.$$"
mkdir -p "$cache" && mv "$cache_root/.minio.$$" "$cache/minio"
# shellcheck disable=SC2012  # the names are hex digests
ls -1t "$cache_root" | tail -n +3 | while read -r old; do rm -rf "${cache_root:?}/$old"; done
mv "$work/minio" "$out/minio"
echo "minio built in $((SECONDS - start))s: $out/minio"
