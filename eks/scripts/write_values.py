"""`make eks-values`: write each entry of Terraform's chart_values output (JSON on stdin,
release -> values YAML) to DIR/values-<release>.yaml, the files eks-deploy hands the deploy flow.

    terraform output -json chart_values | python eks/scripts/write_values.py DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def write_values(chart_values: dict[str, str], out: Path) -> list[Path]:
    """Write one values file per release; a release name that is not a plain chart name
    (which could point outside DIR) fails before anything is written."""
    for release in chart_values:
        if not re.fullmatch(r"[a-z0-9-]+", release):
            raise ValueError(f"chart_values: unexpected release name {release!r}")
    written = []
    for release, text in sorted(chart_values.items()):
        path = out / f"values-{release}.yaml"
        path.write_text(text)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: write_values.py DIR < chart_values.json", file=sys.stderr)
        return 2
    try:
        written = write_values(json.load(sys.stdin), Path(argv[0]))
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
