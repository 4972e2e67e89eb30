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
mkdir -p "$out"
mv "$work/minio" "$out/minio"
echo "minio built in $((SECONDS - start))s: $out/minio"
