"""The headline mean over families: each family weighs the same, with a combined interval."""

from __future__ import annotations

import math

import pytest

from eval_assets.metrics.headline import FamilyScore, family_mean
from eval_assets.metrics.stats import WILSON_Z
from eval_assets.metrics.vqa import vqa_accuracy


def test_each_family_weighs_the_same_however_many_cases_it_has() -> None:
    big = FamilyScore(family="presence", score=0.9, ci_low=0.85, ci_high=0.95, n=432)
    small = FamilyScore(family="closest_object", score=0.1, ci_low=0.0, ci_high=0.5, n=4)
    mean = family_mean([big, small])
    assert mean is not None
    assert mean.mean == pytest.approx(0.5)
    assert mean.n_families == 2 and mean.n_cases == 436
    # se = sqrt(se_1^2 + se_2^2) / 2 with se_f = half width / z.
    se = math.sqrt((0.05 / WILSON_Z) ** 2 + (0.25 / WILSON_Z) ** 2) / 2
    assert mean.ci_low == pytest.approx(0.5 - WILSON_Z * se)
    assert mean.ci_high == pytest.approx(0.5 + WILSON_Z * se)


def test_families_without_cases_do_not_count_and_no_family_has_no_mean() -> None:
    empty = FamilyScore(family="x", score=None, n=0)
    one = FamilyScore(family="y", kind="mra", score=0.4, n=3)
    mean = family_mean([empty, one])
    assert mean is not None and mean.n_families == 1 and mean.mean == pytest.approx(0.4)
    assert mean.ci_low is None and mean.ci_high is None  # an MRA family without an interval
    assert family_mean([empty]) is None
    with pytest.raises(ValueError, match="once"):
        family_mean([one, one])


def test_interval_is_clipped_to_zero_and_one() -> None:
    mean = family_mean([FamilyScore(family="a", score=1.0, ci_low=0.2, ci_high=1.0, n=2)])
    assert mean is not None and mean.ci_high == 1.0 and mean.ci_low == pytest.approx(0.6)


def test_vqa_report_carries_the_family_mean_unlike_the_pooled_accuracy() -> None:
    rows = [{"case_id": f"p{i}", "family": "presence", "recording": "r", "frame_index": i,
             "choices": ["yes", "no"], "answer": "yes", "prediction": "yes"} for i in range(9)]
    rows.append({"case_id": "c", "family": "closest_object", "recording": "r",
                 "frame_index": 0, "choices": ["a", "b"], "answer": "a", "prediction": "b"})
    report = vqa_accuracy(rows)
    assert report.overall.accuracy == pytest.approx(0.9)
    assert report.family_mean is not None
    assert report.family_mean.mean == pytest.approx(0.5)
    assert [f.family for f in report.family_mean.families] == ["closest_object", "presence"]
