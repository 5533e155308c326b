"""HTML building blocks of the report: escaping, number formats, tables, meters, sections.

Every string from data goes through :func:`esc`; the helpers return markup to concatenate.
"""

from __future__ import annotations

import base64
import html
import importlib
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from eval_assets.metrics.stats import MIN_RELIABLE_N


def charts() -> Any:
    """The chart module, imported when a report is rendered (it loads matplotlib, which the
    code location does not need at import)."""
    return importlib.import_module("eval_assets.report.charts")


def esc(value: Any) -> str:
    """``value`` as text, escaped for HTML (quotes included)."""
    return html.escape(str(value), quote=True)


def missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(math.isnan(float(value)))
    except (TypeError, ValueError):
        return False


NA = '<span class="na">n/a</span>'


def pct(value: Any, digits: int = 1) -> str:
    return NA if missing(value) else f"{float(value) * 100:.{digits}f}%"


def num(value: Any, digits: int = 2) -> str:
    return NA if missing(value) else f"{float(value):.{digits}f}"


def count(value: Any) -> str:
    return NA if missing(value) else f"{int(value):,}"


def low_n(n: Any) -> bool:
    return not missing(n) and 0 < int(n) < MIN_RELIABLE_N


def flag(n: Any) -> str:
    return f'<span class="flag" title="fewer than {MIN_RELIABLE_N} cases: the interval is ' \
        f'too wide to rely on">n&lt;{MIN_RELIABLE_N}</span>' if low_n(n) else ""


def img(png: bytes, alt: str, cls: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="{cls}" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def table(headers: Sequence[tuple[str, bool]], rows: Iterable[Sequence[str]],
           row_classes: Sequence[str] | None = None) -> str:
    """A table; ``headers`` are (label, numeric); cells are already-escaped HTML."""
    head = "".join(f'<th class="num">{esc(h)}</th>' if numeric else f"<th>{esc(h)}</th>"
                   for h, numeric in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if numeric else f"<td>{c}</td>"
            for c, (_, numeric) in zip(row, headers, strict=True))
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def meter(acc: float, low: float, high: float, chance: float, n: Any = None) -> str:
    if missing(acc):
        return ""
    parts = [f'<span class="fill" style="width:{acc * 100:.1f}%"></span>']
    if not missing(low) and not missing(high):
        parts.append(f'<span class="band" style="left:{low * 100:.1f}%;'
                     f'width:{max(0.0, high - low) * 100:.1f}%"></span>')
    if not missing(chance):
        parts.append(f'<span class="chance" style="left:{chance * 100:.1f}%"></span>')
    cls = "meter lown" if low_n(n) else "meter"
    return f'<span class="{cls}">{"".join(parts)}</span>'


def acc_cell(acc: Any, low: Any, high: Any, n: Any = None) -> str:
    if missing(acc):
        return NA
    return f'{pct(acc)} <span class="ci">[{pct(low)}–{pct(high)}]</span>{flag(n)}'


# A section's explanation longer than this is folded behind a <details> element: the page shows
# each section's numbers first (unfolded, 33 sections were over 30,000 px tall).
FOLD_LEAD_CHARS = 400


def section(anchor: str, title: str, lead: str, body: str, *, fold: bool | None = None) -> str:
    """A section: its title, its explanation (``lead``, HTML; folded behind "How to read this"
    when ``fold``, by default when longer than :data:`FOLD_LEAD_CHARS`) and its body."""
    if fold is None:
        fold = len(lead) > FOLD_LEAD_CHARS
    lead_html = f'<p class="lead">{lead}</p>' if lead else ""
    if lead and fold:
        lead_html = (f'<details class="how"><summary>How to read this section</summary>'
                     f"{lead_html}</details>")
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>{lead_html}{body}</section>'


def chart(render: Callable[[pd.DataFrame], bytes], leaderboard: pd.DataFrame,
           alt: str) -> str:
    try:
        return img(render(leaderboard), alt, "chart")
    except ValueError as exc:
        # A chart with nothing to plot (no families, no per-recording rows) is a note, not a crash.
        return f'<p class="empty">{esc(f"No chart: {exc}")}</p>'


INTERVAL_NOTE = ("Interval: 95%, clustered by frame (the ~30 questions of one frame are not "
                  "independent): a Wilson interval over the effective sample size n / design "
                  "effect.")


def p_text(p: float) -> str:
    """A p-value with four decimals, or "<0.0001"."""
    return "&lt;0.0001" if p < 1e-4 else f"{p:.4f}"
