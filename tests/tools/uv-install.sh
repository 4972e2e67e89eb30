#!/usr/bin/env bash
# Install packages with uv into a Python environment, with their bytecode: from uv's cache
# alone first, then online. The one place of that logic, for the project's venv (Makefile)
# and checkov's (install-checkov.sh).
#
#   uv-install.sh UV PYTHON PACKAGE...
#
# Cache first: a package index whose answers to revalidation always say "modified" (the one
# here) would otherwise have uv download and build pyspark's sdist again for every new venv;
# with anything missing from the cache, the offline try fails and uv goes online.
# --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (this CI machine)
# nothing else writes a .pyc, and every process would compile what it imports (pyspark
# included), 600 core-s more over a `make test`.
set -euo pipefail

usage="usage: uv-install.sh UV PYTHON PACKAGE..."
uv=${1:?$usage}
python=${2:?$usage}
shift 2
(($#)) || { echo "$usage" >&2; exit 2; }
[ -x "$uv" ] || { echo "error: uv is not an executable: '$uv'" >&2; exit 2; }
install=("$uv" pip install -q --compile-bytecode --python "$python")
"${install[@]}" --offline "$@" 2>/dev/null || "${install[@]}" "$@"
