"""The report opens with the answer: which model is best, by how much, how certain, whether each
beats the best baseline, and what to distrust; "at chance" said plainly when it is so."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from eval_assets.metrics.stats import adjust_comparisons, paired_comparison
from eval_assets.report.answer_section import (
    answer_section,
    baseline_rows,
    build_answer,
    solvable_by_family,
)
from eval_assets.report.coverage import build_coverage
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import ALL_RECORDINGS, COMMON, build_leaderboard
from eval_assets.report.nav import GROUPS
from eval_assets.schemas.report import CaseCard
from eval_assets_tests.report.builders import YES_NO, result, row

NAN = math.nan


def _row(model: str, headline: float, low: float, high: float, *, chance: float = 0.5,
         baseline: str = "", parse: float = 0.0, **more: Any) -> dict[str, Any]:
    """One pooled common row of a leaderboard, as the board writes it."""
    return {"recording": ALL_RECORDINGS, "case_set": COMMON, "model": model,
            "family_mean": headline, "family_mean_ci_low": low, "family_mean_ci_high": high,
            "headline_chance": chance, "vqa_accuracy": headline, "vqa_ci_low": low,
            "vqa_ci_high": high, "chance": chance, "parse_failure_rate": parse,
            "baseline": baseline, "n_cases": 200, **more}


def _coverage(models: list[str]):
    """A coverage whose ranked models are ``models``, on 200 common cases."""
    cells = [result("rec", m, [row(f"c{i}", "presence", "yes", "yes", "rec", frame_index=i)
                               for i in range(200)]) for m in models]
    return build_coverage(cells)


def _comparison(a: str, b: str, a_only: int, b_only: int):
    """a vs b on 200 cases, one per frame: 100 both right, the discordant ones as given."""
    both = 100
    a_right = [True] * both + [True] * a_only + [False] * b_only
    b_right = [True] * both + [False] * a_only + [True] * b_only
    pad = 200 - len(a_right)
    return paired_comparison(a, b, list(range(200)), a_right + [False] * pad,
                             b_right + [False] * pad)


def test_a_clear_winner_is_named_with_its_margin_certainty_and_the_baseline_it_beats() -> None:
    table = pd.DataFrame([
        _row("vlm-a", 0.80, 0.74, 0.86, over_blind=0.28, over_blind_ci_low=0.2,
             over_blind_ci_high=0.36, best_blind="random"),
        _row("vlm-b", 0.60, 0.53, 0.67, over_blind=0.08, over_blind_ci_low=-0.01,
             over_blind_ci_high=0.17, best_blind="random"),
        _row("random", 0.52, 0.45, 0.59, baseline="random"),
        _row("Chance level (frequency)", 0.50, 0.50, 0.50, baseline="frequency")])
    comparisons = adjust_comparisons([_comparison("vlm-a", "vlm-b", 40, 2),
                                      _comparison("vlm-b", "random", 10, 8),
                                      _comparison("vlm-a", "random", 45, 3)])
    answer = build_answer(table, comparisons, _coverage(["vlm-a", "vlm-b", "random"]))
    assert [r.model for r in answer.candidates] == ["vlm-a", "vlm-b"]
    assert answer.best is not None and answer.best.model == "vlm-a"
    assert answer.runner_up is not None and answer.runner_up.model == "vlm-b"
    # The frequency row counts as a baseline through the board's column, not by its name.
    assert {r.model for r in answer.rows if r.baseline} == {"random", "Chance level (frequency)"}
    assert [r.chance for r in answer.rows] == ["above", "above", "at", "at"]
    html = answer_section(answer)
    line = html.split('class="answer-line">', 1)[1].split("</p>", 1)[0]
    assert ">vlm-a</span> is best, +20.0 pts over" in line and "(significant)" in line
    assert "1 of 2 beat the best baseline" in line
    # vlm-b's gap over the best blind baseline has an interval holding 0: not above it.
    assert "+8.0 pts over <span class=\"model\">random</span>" in html
    assert "not above it" in html and "above it</span>" in html
    assert "at chance" not in line


def test_models_at_chance_are_said_to_be_so_plainly() -> None:
    table = pd.DataFrame([_row("random", 0.52, 0.44, 0.60, baseline="random"),
                          _row("blind-smollm2", 0.49, 0.41, 0.57, baseline="blind")])
    comparisons = adjust_comparisons([_comparison("random", "blind-smollm2", 12, 10)])
    html = answer_section(build_answer(table, comparisons, _coverage(["random",
                                                                      "blind-smollm2"])))
    assert "Both models are at chance level. Only baselines were run." in html
    assert "not established" in html and "not significant" in html
    # A row below its chance level is named as such.
    below = pd.DataFrame([_row("m1", 0.50, 0.44, 0.56), _row("m2", 0.30, 0.25, 0.35)])
    html = answer_section(build_answer(below, [], _coverage(["m1", "m2"])))
    assert "Neither model is above chance level (" in html and "m2</span> below it" in html
    assert "No baseline was run" in html


def test_any_row_marked_a_baseline_counts_and_the_local_models_by_name() -> None:
    table = pd.DataFrame([_row("vlm", 0.7, 0.6, 0.8), _row("prior", 0.5, 0.5, 0.5,
                                                            baseline="frequency"),
                          _row("random", 0.5, 0.4, 0.6)])
    assert baseline_rows(table) == {"prior", "random"}
    assert baseline_rows(table, ["vlm"]) == {"prior", "random", "vlm"}
    legacy = table.drop(columns=["baseline"])  # an older board without the column
    assert baseline_rows(legacy) == {"random"}


def test_what_to_distrust_lists_small_families_parse_failures_stale_cells_and_blind_cases(
        ) -> None:
    ok = [row(f"c{i}", "presence", "yes" if i % 2 else "no", "yes", "rec", frame_index=i)
          for i in range(30)]
    ok += [row("d0", "object_distance", "a", "b", "rec", ["a", "b"], frame_index=40)]
    unparsed = [{**r, "prediction": "maybe"} if i < 10 else r for i, r in enumerate(ok)]
    results = [result("rec", "good", ok), result("rec", "vague", unparsed),
               result("rec", "old", ok, sha="a" * 64)]
    cover = build_coverage(results, ["rec"], ["good", "vague", "old"], {"rec": "0" * 64})
    board = build_leaderboard(results, coverage=cover)
    cards = [CaseCard(kind="vqa", recording="rec", model=m, case_id=f"c{i}", frame_index=i,
                      family="presence", question="q", choices=YES_NO, gold="yes",
                      raw_response="yes", predicted_choice="yes", tier="exact",
                      status="correct", bias_score=0.9 if i < 3 else 0.1,
                      blind_solvable=i < 3) for i in range(4) for m in ("good", "vague")]
    assert solvable_by_family(cards) == {"presence": (3, 4)}
    answer = build_answer(board, [], cover, solvable=solvable_by_family(cards))
    text = " ".join(answer.distrust)
    assert "1 stale" in text and "old on rec" in text
    assert "families too small" in text and "object distance (1)" in text
    assert "High parse-failure rate" in text and "vague" in text
    assert "75% of the 4 audited cases are blind-solvable" in text and "presence" in text


def test_the_page_opens_with_the_answer_and_every_section_is_in_at_most_twelve_groups() -> None:
    rows = [row(f"c{i}", "presence", "yes" if i % 2 else "no", "yes" if i % 4 < 2 else "no",
                "rec", frame_index=i) for i in range(40)]
    results = [result("rec", "m1", rows), result("rec", "random", list(reversed(rows)))]
    text = render_report(build_leaderboard(results), results, [], "t")
    main = text.split("<main", 1)[1]
    assert re.search(r'<section id="([^"]+)"', main).group(1) == "answer"  # type: ignore[union-attr]
    sections = re.findall(r'<section id="([^"]+)"', main)
    assert sections[-1] == "methods"
    nav = text.split("<nav>", 1)[1].split("</nav>", 1)[0]
    tops = re.findall(r'href="#([^"]+)" class="nav-top">([^<]+)<', nav)
    assert len(tops) <= 12 and len(GROUPS) <= 12
    assert tops[0][1] == "Answer"
    # Every linked section is in the menu and in its group's heading; each target exists.
    linked = set(re.findall(r'href="#([^"]+)"', nav))
    assert {"headline", "comparisons", "families", "cases", "methods", "coverage"} <= linked
    assert all(f'id="{anchor}"' in text for anchor in linked)
    # The headline's long explanation is folded; the answer block comes before it.
    headline = text.split('id="headline"', 1)[1].split("</section>", 1)[0]
    assert '<details class="how"><summary>' in headline
    assert text.index('id="answer"') < text.index('id="headline"')


def test_a_section_no_group_names_still_gets_a_link_and_a_heading_links_each_section() -> None:
    from eval_assets.report.nav import FALLBACK, NavSection, grouped, render_nav_and_body

    sections = [NavSection("first-new", "First", "<section id=\"first-new\"></section>"),
                NavSection("methods", "Methods", "<section id=\"methods\"></section>"),
                NavSection("pope", "POPE", "<section id=\"pope\"></section>"),
                NavSection("new-metric", "New", "<section id=\"new-metric\"></section>"),
                NavSection("answer", "Answer", "<section id=\"answer\"></section>")]
    groups = grouped(sections)
    # An unnamed section joins the group of the one before it (FALLBACK when it is first).
    assert [g.anchor for g, _ in groups] == ["answer", FALLBACK, "g-methods"]
    assert [s.anchor for s in groups[1][1]] == ["pope", "first-new", "new-metric"]
    nav, body = render_nav_and_body(sections)
    assert body.index('id="answer"') < body.index(f'id="{FALLBACK}"') < body.index(
        'id="new-metric"') < body.index('id="methods"')
    assert '<a href="#new-metric">New</a>' in nav and '<a href="#new-metric">New</a>' in body
    # A group of one section links straight to it.
    assert 'href="#methods" class="nav-top">Methods<' in nav
