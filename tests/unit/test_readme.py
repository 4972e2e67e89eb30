"""The README and the manual (docs/pages) stay true: every `make X` they show is a target,
every `logberg X` a command."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from logberg.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
# The manual's pages, but the generated CLI reference (made from the parser itself).
PAGES = {
    p.relative_to(REPO).as_posix(): p.read_text()
    for p in sorted((REPO / "docs" / "pages").rglob("*.md"))
    if p.parent.name != "reference"
}


def make_targets() -> set[str]:
    out = subprocess.run(["make", "-qp"], cwd=REPO, capture_output=True, text=True).stdout
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z0-9_-]+):", out, re.M)}


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\bmake ([a-z][a-z0-9-]+)", README))))
def test_every_make_command_in_the_readme_exists(target: str) -> None:
    assert target in make_targets()


def test_every_logberg_subcommand_in_the_readme_exists() -> None:
    shown = set(re.findall(r"logberg (\w[\w-]*)", README))
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    known = set(commands.choices)
    assert shown <= known, shown - known
    assert {"local", "sql", "query", "ingest", "analytics", "run", "generate"} <= shown


MAKE = r"\bmake ([a-z][a-z0-9-]+)"


@pytest.mark.parametrize(
    "page,target", sorted({(n, t) for n, text in PAGES.items() for t in re.findall(MAKE, text)})
)
def test_every_make_command_in_the_manual_exists(page: str, target: str) -> None:
    assert target in make_targets(), f"{page} shows `make {target}`"


def code(text: str) -> str:
    """The fenced blocks and inline code spans of a page (its prose says "logberg rejects")."""
    return "\n".join(re.findall(r"```.*?```|`[^`\n]+`", text, re.S))


def test_every_logberg_subcommand_in_the_manual_exists() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    shown = {
        (n, c) for n, text in PAGES.items() for c in re.findall(r"logberg (\w[\w-]*)", code(text))
    }
    unknown = sorted((n, c) for n, c in shown if c not in commands.choices)
    assert not unknown, unknown
    assert {"maintain", "rollback", "report", "local"} <= {c for _, c in shown}
