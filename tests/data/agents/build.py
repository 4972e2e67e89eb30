"""Rebuild this folder's agent sets from their public sources (run by hand, never by tests).

    python tests/data/agents/build.py

Sources, pinned (npm registry tarballs, checked against the registry's sha512):
- browsers.tsv: `user-agents` 2.1.198 (Intoli, BSD-2-Clause), dist/user-agents.json: browser
  agents sampled from real traffic, each with its share of that traffic. Rows with the same
  agent are summed; the columns are share, agent.
- automated.tsv: `crawler-user-agents` 1.60.0 (Martin Monperrus and contributors, MIT),
  crawler-user-agents.json: each pattern's observed `instances`, with the pattern's tags
  (search-engine, feed-reader, monitoring, http-library, ...); columns tags, agent.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import urllib.request
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REGISTRY = "https://registry.npmjs.org"
PACKAGES = {"user-agents": "2.1.198", "crawler-user-agents": "1.60.0"}


def tarball(name: str, version: str) -> tarfile.TarFile:
    meta = json.load(urllib.request.urlopen(f"{REGISTRY}/{name}/{version}"))
    data = urllib.request.urlopen(meta["dist"]["tarball"]).read()
    algo, _, digest = meta["dist"]["integrity"].partition("-")
    if algo != "sha512" or hashlib.sha512(data).digest() != base64.b64decode(digest):
        raise SystemExit(f"{name}@{version}: tarball does not match the registry's integrity")
    return tarfile.open(fileobj=io.BytesIO(data))


def clean(agent: str) -> str | None:
    """One line of a TSV: agents with tabs or newlines cannot be logged as is; skip them."""
    agent = agent.strip()
    return agent if agent and "\t" not in agent and "\n" not in agent else None


def main() -> None:
    with tarball("user-agents", PACKAGES["user-agents"]) as tar:
        f = tar.extractfile("package/dist/user-agents.json")
        assert f is not None
        share: Counter[str] = Counter()
        for row in json.load(f):
            if (a := clean(row["userAgent"])) is not None:
                share[a] += row["weight"]
    lines = [f"{w:.10f}\t{a}" for a, w in sorted(share.items(), key=lambda kv: (-kv[1], kv[0]))]
    (HERE / "browsers.tsv").write_text("\n".join(lines) + "\n")

    with tarball("crawler-user-agents", PACKAGES["crawler-user-agents"]) as tar:
        f = tar.extractfile("package/crawler-user-agents.json")
        assert f is not None
        seen: dict[str, str] = {}
        for entry in json.load(f):
            tags = ",".join(entry.get("tags", [])) or "-"
            for inst in entry.get("instances", []):
                if (a := clean(inst)) is not None:
                    seen.setdefault(a, tags)
    lines = [f"{t}\t{a}" for a, t in sorted(seen.items())]
    (HERE / "automated.tsv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
