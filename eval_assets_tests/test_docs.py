"""The README and the documentation site stay what a user needs: short, complete, linked."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

from eval_assets.scoring import METRICS
from eval_assets.vqa.declarations import families

REPO = Path(__file__).resolve().parent.parent
_HOOK = importlib.util.spec_from_file_location("docs_metrics_table",
                                               REPO / "scripts" / "docs_metrics_table.py")
assert _HOOK is not None and _HOOK.loader is not None
metrics_table = importlib.util.module_from_spec(_HOOK)
_HOOK.loader.exec_module(metrics_table)
DOCS = REPO / "docs"
README_MAX_LINES = 200


def _nav_pages() -> set[str]:
    config = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    return {next(iter(entry.values())) for entry in config["nav"]}


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## The two commands"
    text = "\n".join(lines)
    for command in ("make demo", "make test"):
        assert command in text


def test_readme_links_resolve() -> None:
    text = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_every_doc_page_is_in_the_nav() -> None:
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages == _nav_pages()


def test_every_family_has_its_section_and_an_example() -> None:
    text = (DOCS / "families.md").read_text()
    for spec in families():
        assert f"## {spec.name}\n" in text, f"docs/families.md: no section for {spec.name}"
        assert f"> {spec.question}\n" in text, f"docs/families.md: {spec.name}'s question changed"
        if spec.rule is not None:
            assert (DOCS / "img" / "families" / f"{spec.name}.jpg").is_file(), (
                f"no example image for {spec.name}: run scripts/docs_family_examples.py")


def test_every_metric_has_a_row_and_a_new_one_needs_no_docs_edit() -> None:
    """The hand-written table covers the built-in metrics; the site's hook adds a row from the
    spec of any metric registered since, so adding a metric stays its module and its test."""
    text = (DOCS / "metrics.md").read_text()
    assert metrics_table.missing_rows(text) == []
    for spec in METRICS:
        row = f"| `{spec.name}` |"
        shortened = text.replace(row, "| `gone` |")
        assert [r for r in metrics_table.missing_rows(shortened) if r.startswith(row)], spec.name
    assert metrics_table.MARKER in text
