"""The report's navigation: its sections grouped under at most twelve headings, in the order a
reader asks (the answer, the ranking, per family, spatial, motion, robustness, other metrics,
the data behind them, cost, the cases, history, methods).

Each group is one link of the navigation bar, with its sections in a menu under it (shown on
hover and on keyboard focus); in the page, a group of several sections opens with a heading that
links each of them, so every section stays one click away without the menu. A section whose
anchor no group names (a metric added later) joins the group of the section given before it (a
drawn section follows the section its spec names), or :data:`FALLBACK` when it comes first; the
groups keep the order of :data:`GROUPS`, and sections within a group their order in the group,
then the order they were given in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval_assets.report.markup import esc

__all__ = ["FALLBACK", "GROUPS", "Group", "NavSection", "grouped", "render_nav_and_body"]


@dataclass(frozen=True)
class Group:
    """One heading of the navigation: its anchor, its label and the section anchors it holds."""

    anchor: str
    label: str
    sections: tuple[str, ...]


GROUPS: tuple[Group, ...] = (
    Group("answer", "Answer", ("answer", "served")),  # served: "answered by another model"
    Group("g-leaderboard", "Leaderboard", ("headline", "comparisons", "recordings")),
    # The evidence's quality before the family results: read it before trusting a family.
    Group("g-families", "Families", ("evidence-quality", "families", "baselines",
                                     "blind-solvability")),
    Group("g-spatial", "Spatial", ("spatial", "numeric", "numeric-families", "spatial-cards")),
    Group("g-motion", "Motion", ("motion", "time-flip", "repeat-frames")),
    Group("g-robustness", "Robustness", ("circular", "flip", "prompt-templates",
                                         "sampling-stability", "structured-answers")),
    Group("g-judges", "Judges & metrics", ("pope", "mcq", "judge", "vision", "chair")),
    Group("g-data", "Data & evidence", ("coverage", "label-audit", "not-computed")),
    Group("g-cost", "Cost & endpoints", ("endpoints", "concurrency", "cost")),
    Group("g-cases", "Cases", ("cases",)),
    Group("g-history", "History", ("nights", "drift")),
    Group("g-methods", "Methods", ("methods",)),
)
FALLBACK = "g-judges"  # where a section no group names goes


@dataclass(frozen=True)
class NavSection:
    """One section of the page: its anchor, its navigation label (None: not linked) and HTML."""

    anchor: str
    nav: str | None
    html: str


def grouped(sections: Sequence[NavSection]) -> list[tuple[Group, list[NavSection]]]:
    """The sections under their groups, in :data:`GROUPS` order (groups with no section left
    out)."""
    home = {a: g.anchor for g in GROUPS for a in g.sections}
    position = {a: i for g in GROUPS for i, a in enumerate(g.sections)}
    previous = FALLBACK
    for s in sections:
        previous = home.setdefault(s.anchor, previous)
    out = []
    for group in GROUPS:
        mine = [s for s in sections if home[s.anchor] == group.anchor]
        mine.sort(key=lambda s: position.get(s.anchor, len(position)))  # stable: given order
        if mine:
            out.append((group, mine))
    return out


def _target(group: Group, linked: Sequence[NavSection]) -> str:
    """Where the group's link goes: its only section, or its heading in the page."""
    return linked[0].anchor if len(linked) == 1 else group.anchor


def render_nav_and_body(sections: Sequence[NavSection]) -> tuple[str, str]:
    """(the navigation's HTML, the page body's): one link per group with its sections in a
    menu, and the sections in group order, each group of several opening with its heading."""
    nav, body = [], []
    for group, mine in grouped(sections):
        linked = [s for s in mine if s.nav]
        if linked:
            links = "".join(f'<a href="#{esc(s.anchor)}">{esc(s.nav)}</a>' for s in linked)
            menu = f'<div class="nav-menu">{links}</div>' if len(linked) > 1 else ""
            nav.append(f'<div class="nav-group"><a href="#{esc(_target(group, linked))}" '
                       f'class="nav-top">{esc(group.label)}</a>{menu}</div>')
        if len(linked) > 1:
            body.append(f'<div class="group-head" id="{esc(group.anchor)}"><h2>'
                        f"{esc(group.label)}</h2><p>"
                        + " · ".join(f'<a href="#{esc(s.anchor)}">{esc(s.nav)}</a>'
                                     for s in linked) + "</p></div>")
        body += [s.html for s in mine]
    return "".join(nav), "".join(body)
