"""The README and the manual (docs/pages) stay true: every `make X` they show is a target,
every `logberg X` a command, and every block of commands that needs EKS says so on
its first line (`# needs: EKS`)."""

from __future__ import annotations

import argparse
import re
import subprocess
from collections.abc import Iterator
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


def test_the_layout_section_names_each_top_level_folder_and_names_only_what_is_there() -> None:
    """The README's Layout table: a row for each folder of the checkout's files, and every
    path it names (in its first column, or a `folder/...` of its second) exists."""
    section = README.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| `")]
    firsts = {p for r in rows for p in re.findall(r"`([^`]+)`", r.split("|")[1])}
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout
    folders = {f"{f.split('/')[0]}/" for f in files.splitlines() if "/" in f}
    unlisted = {f for f in folders if not any(p.startswith(f) for p in firsts)}
    assert folders and not unlisted, unlisted
    missing = []
    for row in rows:
        first, what = row.split("|")[1:3]
        here = re.findall(r"`([^`]+)`", first)
        for p in here + re.findall(r"`([a-z.]+/[\w./-]*)`", what):
            # A path of the second column is the repository's or inside the row's folder.
            if not any((REPO / base / p).exists() for base in ["", *here]):
                missing.append(p)
    assert not missing, missing
    assert "(docs/pages/development/layout.md)" in section


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


# ------------------------------------------------------------------ commands that need EKS
# A command block (a fenced block of README.md or of the manual) that shows a command needing
# EKS says so on its first line, `# needs: EKS`, with anything after it in words; every other
# command is one the tests run (kind's flow too: tests/e2e runs it, so nothing is marked
# `needs: kind` any more, and a block that says so is wrong).
# Which make targets need them is read from the Makefiles themselves.
MAKEFILES = ["Makefile", "eks/eks.mk", "charts/k8s.mk", "images/images.mk"]
RULE = re.compile(r"^([a-z][a-z0-9-]*):(?!=)([^#\n]*)[^\n]*\n", re.M)
NEEDS = re.compile(r"^#\s*needs:(.*)$")
# Commands that need an AWS account whatever make says.
EKS_PROGRAMS = {"terraform", "tofu", "aws", "eksctl"}


def rules() -> dict[str, tuple[set[str], str]]:
    """Each target of the Makefiles: its prerequisites (order-only ones too) and its recipe."""
    found: dict[str, tuple[set[str], str]] = {}
    for name in MAKEFILES:
        text = (REPO / name).read_text()
        for m in RULE.finditer(text):
            recipe = re.match(r"(?:\t.*\n|ifeq.*\n|else\n|endif\n)*", text[m.end() :])
            assert recipe is not None
            found[m.group(1)] = (set(m.group(2).replace("|", " ").split()), recipe.group(0))
    return found


def needs_of_targets() -> dict[str, set[str]]:
    """The targets that need EKS (terraform and the AWS CLI: eks/scripts/tools.sh, or a
    terraform/tofu command of eks/), directly, through a prerequisite or a recursive make,
    or by deploying with K8S_TARGET=eks."""
    found = rules()
    direct: dict[str, set[str]] = {}
    edges: dict[str, set[str]] = {}
    for target, (prereqs, recipe) in found.items():
        direct[target] = set()
        if "eks/scripts/tools.sh" in recipe or "$(EKS_TF_CMD)" in recipe:
            direct[target].add("EKS")
        if "K8S_TARGET=eks" in recipe:
            direct[target].add("EKS")
        called = set(re.findall(r"\$\(MAKE\)[^\n]*", recipe))
        words = {w for line in called for w in line.split()}
        edges[target] = (prereqs | words) & set(found)
    needs = {t: set(d) for t, d in direct.items()}
    changed = True
    while changed:
        changed = False
        for target in needs:
            more = set().union(*(needs[d] for d in edges[target])) - needs[target]
            if more:
                needs[target] |= more
                changed = True
    return {t: n for t, n in needs.items() if n}


def test_the_targets_that_need_eks_are_read_from_the_makefiles() -> None:
    needs = needs_of_targets()
    eks = {t for t, n in needs.items() if "EKS" in n}
    assert {"eks-up", "eks-demo", "eks-down", "eks-deploy", "eks-push", "eks-lock"} <= eks
    # What the tests run: the static checks of eks/, its MinIO, kind's flow.
    ran = {"eks-lint", "eks-minio", "eks-checkov-venv", "k8s-deploy", "k8s-demo",
           "kind-up", "kind-demo", "kind-down", "kind-node-image"}  # fmt: skip
    assert not ran & set(needs), ran & set(needs)


def blocks(text: str) -> list[str]:
    """The fenced blocks of a page, each without its fences."""
    return re.findall(r"^ *```[^\n]*\n(.*?)^ *```", text, re.S | re.M)


def commands(block: str) -> Iterator[list[str]]:
    """Each command of a block as words: continuation lines joined, comments dropped,
    split at `&&`, `||`, `;` and `|`."""
    for line in block.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*", "", line)
        for part in re.split(r"&&|\|\||;|\|", line):
            if part.split():
                yield part.split()


def needed(block: str, targets: dict[str, set[str]]) -> set[str]:
    """What the block's commands need of EKS."""
    out: set[str] = set()
    for words in commands(block):
        settings = [w for w in words if re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
        rest = [w for w in words if w not in settings]
        program = Path(rest[0]).name if rest else ""
        if program in EKS_PROGRAMS:
            out.add("EKS")
        if program == "make":
            for w in rest[1:]:
                out |= targets.get(w, set())
        out |= {"EKS" for s in settings if s == "K8S_TARGET=eks"}
    return out


def marked(block: str) -> set[str]:
    """What the block's first line says it needs (`# needs: EKS, kind ...`)."""
    first = block.split("\n", 1)[0].strip()
    m = NEEDS.match(first)
    return set(re.findall(r"\b(EKS|kind)\b", m.group(1))) if m else set()


SHOWN = {"README.md": README, **PAGES}


@pytest.mark.parametrize("page", sorted(SHOWN))
def test_every_block_that_needs_eks_or_kind_says_so(page: str) -> None:
    targets = needs_of_targets()
    wrong = []
    for block in blocks(SHOWN[page]):
        need, mark = needed(block, targets), marked(block)
        if need != mark:
            first = next(commands(block), [""])
            wrong.append(f"`{' '.join(first)} ...` needs {sorted(need)}, is marked {sorted(mark)}")
    rule = "a block's first line says `# needs: EKS` or `# needs: kind`, as its commands need"
    assert not wrong, f"{page}: {rule}: {wrong}"


def test_the_manual_shows_the_eks_flow_marked() -> None:
    """The check above is not vacuous: the Kubernetes page has a marked EKS block, and the
    check sees what an unmarked one would need; kind's flow needs nothing the tests lack."""
    targets = needs_of_targets()
    page = [b for b in blocks(PAGES["docs/pages/kubernetes.md"]) if marked(b)]
    assert {frozenset(marked(b)) for b in page} == {frozenset({"EKS"})}
    assert needed("make kind-up && make k8s-demo\n", targets) == set()
    assert needed("make k8s-deploy K8S_TARGET=eks  # on EKS\n", targets) == {"EKS"}
    assert needed("AWS_PROFILE=x aws eks update-kubeconfig --name logberg\n", targets) == {"EKS"}
    assert needed("make kind-node-image && make k8s-deploy  # K8S_TARGET=kind\n", targets) == set()
    assert marked("# needs: EKS, kind (an AWS account)\nmake eks-up\n") == {"EKS", "kind"}
