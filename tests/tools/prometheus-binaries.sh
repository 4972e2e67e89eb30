#!/usr/bin/env bash
# Debian's Prometheus, promtool and Pushgateway, at pinned package versions, unpacked into
# DEST/bin without installing the packages (no service user, no daemon started): what the
# metrics tests run. Cached: nothing is fetched when DEST/bin has all three.
#
#   prometheus-binaries.sh DEST PROMETHEUS_VERSION PUSHGATEWAY_VERSION
set -euo pipefail
(($# == 3)) || { echo "usage: prometheus-binaries.sh DEST PROMETHEUS_VERSION PUSHGATEWAY_VERSION" >&2; exit 2; }
dest=$1
want=(prometheus promtool prometheus-pushgateway)
have=0
for b in "${want[@]}"; do [ -x "$dest/bin/$b" ] && have=$((have + 1)); done
((have == ${#want[@]})) && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
fetch() { apt-get download -qq "prometheus=$2" "prometheus-pushgateway=$3" 2>/dev/null; }
# apt-get download checks the packages' signatures through the archive's lists.
fetch "$dest" "$2" "$3" || { $sudo apt-get update -qq && fetch "$dest" "$2" "$3"; } || {
  echo "prometheus $2 / prometheus-pushgateway $3: not in this machine's Debian archive" >&2
  exit 1
}
for deb in ./*.deb; do dpkg-deb -x "$deb" root; done
mkdir -p "$dest/bin"
for b in "${want[@]}"; do install -m 0755 "root/usr/bin/$b" "$dest/bin/$b"; done
"$dest/bin/promtool" --version | head -1
