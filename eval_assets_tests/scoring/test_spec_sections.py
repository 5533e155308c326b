"""Every report section of a metric is its spec's ``section``: table data or drawn HTML."""

from __future__ import annotations

import re

import pytest

from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.scoring import METRICS
from eval_assets.scoring.spec import ReportTable, Section
from eval_assets_tests.report.builders import result, row


def test_a_section_is_table_data_or_drawn_never_both_or_neither() -> None:
    with pytest.raises(ValueError, match="one of the two"):
        Section("x", "X")
    with pytest.raises(ValueError, match="one of the two"):
        Section("x", "X", build=lambda _: ReportTable("x", "X", ""), drawn=True)


def test_every_drawn_section_has_its_drawer_in_the_report() -> None:
    """Scoring declares a drawn section by anchor; the report must draw each (else KeyError)."""
    from eval_assets.report.drawn_sections import DRAWERS

    drawn = {s.anchor for spec in METRICS for s in spec.sections if s.drawn}
    assert drawn == set(DRAWERS), "a drawn section without a drawer, or a drawer for nothing"


def test_the_navigation_links_every_metric_section_in_page_order() -> None:
    results = [result("rec", m, [row("c0", "presence", "yes", "yes", "rec")]) for m in "ab"]
    page = render_report(build_leaderboard(results), results, [], "t")
    # Every link of the navigation: the groups' (to a group's heading, or its only section)
    # and their menus' (to sections).
    nav = re.findall(r'<a href="#([^"]+)"', page.split("<nav>", 1)[1].split("</nav>", 1)[0])
    body = re.findall(r'<(?:section|div class="group-head") id="([^"]+)"', page)
    anchors = [spec.section.anchor for spec in METRICS if spec.section is not None]
    # CircularEval and FlipEval open the Robustness group, together.
    start = nav.index("g-robustness") + 1
    assert nav[start:start + 2] == ["circular", "flip"]
    assert set(anchors) <= set(nav)
    assert len(nav) == len(set(nav)) and nav == [a for a in body if a in nav]
