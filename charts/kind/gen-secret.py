"""Print a Kubernetes Secret manifest (JSON) with freshly generated random values.

    python3 charts/kind/gen-secret.py NAME NAMESPACE KEY=random[:PREFIX] KEY=literal:VALUE ...

For `make kind-up`: the output is piped straight into `kubectl create -f -`, so the values
never appear on a command line, in a file or in the terminal.
"""

from __future__ import annotations

import base64
import json
import secrets
import sys


def value(spec: str) -> str:
    kind, _, arg = spec.partition(":")
    if kind == "random":
        return arg + secrets.token_hex(20)
    if kind == "literal":
        return arg
    raise SystemExit(f"gen-secret: unknown value spec {spec!r} (random[:PREFIX] or literal:VALUE)")


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    name, namespace, *pairs = argv
    data = {}
    for pair in pairs:
        key, _, spec = pair.partition("=")
        data[key] = base64.b64encode(value(spec).encode()).decode()
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "logberg", "logberg.io/generated": "kind"},
        },
        "data": data,
    }
    json.dump(manifest, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
