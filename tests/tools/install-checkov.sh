#!/usr/bin/env bash
# The one checkov install (`make checkov`), for the chart, image and Terraform checks: VERSION
# in its own venv VENV, so its many pins never meet the project's. Idempotent: a venv whose
# checkov reports VERSION is kept; any other state is (re)installed.
#
#   PYTHON=python3 [UV=.venv/bin/uv] install-checkov.sh VENV VERSION
#
# With UV (an executable uv; `make checkov` passes the project venv's), uv installs it: from
# its cache alone first, then online (uv-install.sh, as for the project's venv: a minute of
# pip on a warm machine, seconds of uv). Without one, pip.
set -euo pipefail

usage="usage: install-checkov.sh VENV VERSION"
venv=${1:?$usage}
version=${2:?$usage}
[[ $version =~ ^[0-9]+(\.[0-9]+)*$ ]] || {
  echo "error: CHECKOV_VERSION must be a version like 3.3.30, got '$version'" >&2
  exit 2
}
python=${PYTHON:-python3}
checkov="$venv/bin/checkov"

if [ -x "$checkov" ] && [ "$("$checkov" --version 2>/dev/null)" = "$version" ]; then
  echo "checkov $version ready in $venv"
  exit 0
fi
"$python" -m venv "$venv"
uv=${UV:-}
if [ -n "$uv" ] && [ -x "$uv" ]; then
  "$(dirname "$0")/uv-install.sh" "$uv" "$venv/bin/python" "checkov==$version"
else
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "checkov==$version"
fi
echo "checkov $("$checkov" --version) installed in $venv"
