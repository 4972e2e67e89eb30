#!/usr/bin/env bash
# Install a Debian package with apt-get (as root, else through sudo) unless one of its
# commands is on PATH already; when that fails, print FAILED and succeed anyway, for tools
# whose absence the tests and the bench report themselves (`make browser`, `make bench-tools`).
#
#   apt-install.sh [APT_OPTION ...] PACKAGE COMMAND[,COMMAND ...] FAILED
set -euo pipefail

usage="usage: apt-install.sh [APT_OPTION ...] PACKAGE COMMAND[,COMMAND ...] FAILED"
options=()
while (($# > 3)) && [[ $1 == -* ]]; do
  options+=("$1")
  shift
done
(($# == 3)) || { echo "$usage" >&2; exit 2; }
package=$1
failed=$3
IFS=, read -r -a commands <<<"$2"
[ -n "$package" ] && ((${#commands[@]} > 0)) || { echo "$usage" >&2; exit 2; }

for command in "${commands[@]}"; do
  command -v "$command" >/dev/null && exit 0
done
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
echo "installing $package (apt-get)"
{ $sudo apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${options[@]}" "$package"; } ||
  echo "$failed"
