"""The manual (docs/): its generated reference pages are current, and it builds strictly."""

from __future__ import annotations

import re
from pathlib import Path

from logberg_platform import docs_gen


def test_the_generated_reference_pages_are_current() -> None:
    stale = [str(p.relative_to(docs_gen.REPO)) for p in docs_gen.stale()]
    assert not stale, f"stale generated pages {stale}: run `make docs-gen` and commit them"


def test_the_cli_page_has_every_subcommand() -> None:
    page = docs_gen.cli_page()
    assert "## `logberg local up`" in page and "## `logberg ingest`" in page


def test_the_site_builds_strictly_with_every_page(docs_site: Path) -> None:
    built = {p.relative_to(docs_site).as_posix() for p in docs_site.rglob("index.html")}
    assert {"index.html", "reference/cli/index.html", "operate/security/index.html"} <= built


def test_every_documented_chart_value_has_a_row() -> None:
    for name in docs_gen.CHARTS:
        chart = docs_gen.REPO / "charts" / name
        documented = [
            line for line in (chart / "values.yaml").read_text().splitlines()
            if line.strip().startswith("# --")
        ]  # fmt: skip
        rows = docs_gen.chart_values(chart)
        assert len(rows) == len(documented), name
        assert all(text for _, text, _ in rows), name  # each with its comment
    page = docs_gen.chart_values_page()
    assert '| `image.repository` | `"logberg-spark"` |' in page


def test_the_metrics_page_lists_each_gauge_once() -> None:
    names = [name for name, _, _ in docs_gen.metrics()]
    calls = docs_gen.METRICS_SOURCE.read_text().count("gauge(") - 1  # less its definition
    assert len(names) == len(set(names)) == calls
    assert "| `logberg_ingest_files` | Files the last ingest run read. |" in docs_gen.metrics_page()


def test_every_setting_the_laptop_page_names_is_one_the_code_reads() -> None:
    laptop = (docs_gen.DOCS / "pages" / "laptop.md").read_text()
    shown = set(re.findall(r"`(LOGBERG_[A-Z0-9_]*[A-Z0-9])`", laptop))
    assert "LOGBERG_HOME" in shown
    assert shown <= set(docs_gen.settings()), shown - set(docs_gen.settings())


def test_the_tables_page_has_every_ingest_table() -> None:
    from logberg.lakehouse.schema import INGEST_TABLES

    page = docs_gen.tables_page()
    assert all(f"## `{t.qualified}`" in page for t in INGEST_TABLES)
    assert "| `event_id` | `STRING NOT NULL` |" in page


def test_every_picture_the_readme_and_the_manual_show_is_there() -> None:
    """`mkdocs build --strict` does not check images: each `![...](path)` of README.md and
    of the pages is a PNG in the checkout, the report's screenshot among them."""
    pages = [docs_gen.REPO / "README.md", *sorted((docs_gen.DOCS / "pages").rglob("*.md"))]
    pictures = {
        (page.parent / src).resolve()
        for page in pages
        for src in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text())
    }
    missing = sorted(str(p.relative_to(docs_gen.REPO)) for p in pictures if not p.is_file())
    assert not missing, f"{missing}: make report-screenshot, make history-screenshot"
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pictures)
    img = docs_gen.DOCS / "pages" / "img"
    assert {img / "report.png", img / "history-server.png"} <= pictures
