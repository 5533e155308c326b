"""The comparison table decides on Holm-adjusted p-values and shows the raw ones beside them."""

from __future__ import annotations

from eval_assets.metrics.stats import PairedComparison, adjust_comparisons, paired_comparison
from eval_assets.report.ranking_sections import comparisons_section


def _pair(a_only: int, b_only: int, model_a: str = "a", family: str | None = None
          ) -> PairedComparison:
    """One case per frame: 10 both right, ``a_only`` / ``b_only`` discordant, 10 neither."""
    outcome = [(1, 1)] * 10 + [(1, 0)] * a_only + [(0, 1)] * b_only + [(0, 0)] * 10
    return paired_comparison(model_a, "b", list(range(len(outcome))),
                             [bool(x) for x, _ in outcome], [bool(y) for _, y in outcome],
                             family=family)


def test_a_raw_p_below_005_that_holm_lifts_is_not_called_significant() -> None:
    # Overall a beats b at raw p 0.0129; four null family comparisons share the table, so
    # Holm's p is 5 x 0.0129 = 0.065.
    table = adjust_comparisons([_pair(12, 2), *(_pair(3, 3, family=f"fam{i}")
                                                for i in range(4))])
    body = comparisons_section(table)
    assert "McNemar p (raw)" in body and "Holm p" in body
    assert "significantly better" not in body
    assert "no significant difference after adjusting" in body
    assert "4 comparisons of a pair of models within one family" in body
    # The same pair alone in its table is significant.
    alone = comparisons_section(adjust_comparisons([_pair(12, 2)]))
    assert "a is significantly better" in alone


def test_family_comparisons_with_a_raw_p_below_005_are_listed_with_both_p() -> None:
    table = adjust_comparisons([_pair(3, 3), _pair(12, 2, family="presence"),
                                _pair(30, 2, family="object_count")])
    body = comparisons_section(table)
    assert "<h3 id=\"family-comparisons\">Per family</h3>" in body
    assert "object count" in body and "presence" in body
    # presence: raw 0.0129, Holm 2 x 0.0129 = 0.026 (second smallest of 3): still significant,
    # as is object_count; 2 significant, none lifted above 0.05.
    assert "2 significant, 0 more with a raw p below 0.05" in body
