"""MkDocs hook: every metric of the registry has a row in ``metrics.md``.

The page's table is written by hand (formula and reference per metric); a metric added since (its
module in ``eval_assets/scoring/`` and its test, nothing else) gets a row from its spec: its label
and the first paragraph of its module's docstring. So a new metric is documented without a docs
edit, and the hand-written row can follow when someone writes its formula out.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- metrics from the registry -->"


def missing_rows(markdown: str) -> list[str]:
    """Rows for the registry's metrics that ``markdown``'s table does not name."""
    import eval_assets.vqa.declarations  # noqa: F401 (the scorer reads the families)
    from eval_assets.scoring import METRICS

    named = {line.split("|")[1].strip().strip("`") for line in markdown.splitlines()
             if line.startswith("| `")}
    rows = []
    for spec in METRICS:
        if spec.name in named:
            continue
        summary = " ".join(spec.description.strip().split("\n\n")[0].split())
        rows.append(f"| `{spec.name}` | {summary or spec.label} | its module's docstring, "
                    f"`eval_assets/scoring/` |")
    return rows


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Fill the marker of ``metrics.md`` with the rows the hand-written table lacks."""
    if page.file.src_uri != "metrics.md" or MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n".join(missing_rows(markdown)))
