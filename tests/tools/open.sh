#!/usr/bin/env bash
# Open FILE in a browser (`make report`): `open` on macOS, xdg-open on a Linux desktop,
# else print where it is.
#
#   open.sh FILE
set -euo pipefail

file=${1:?usage: open.sh FILE}
if [ "$(uname)" = Darwin ]; then
  open "$file"
elif command -v xdg-open >/dev/null && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  xdg-open "$file"
else
  echo "open $file in a browser"
fi
