"""The headline mean over families: each family weighs the same, families under the minimum n
are shown but not in it, and the interval carries each family's larger interval side."""

from __future__ import annotations

import math

import pytest

from eval_assets.metrics.headline import MIN_FAMILY_N, FamilyScore, family_mean
from eval_assets.metrics.stats import WILSON_Z
from eval_assets.metrics.vqa import vqa_accuracy


def test_each_family_weighs_the_same_however_many_cases_it_has() -> None:
    big = FamilyScore(family="presence", score=0.9, ci_low=0.85, ci_high=0.95, n=432)
    small = FamilyScore(family="object_distance", score=0.1, ci_low=0.0, ci_high=0.5, n=20)
    mean = family_mean([big, small])
    assert mean is not None
    assert mean.mean == pytest.approx(0.5)
    assert mean.n_families == 2 and mean.n_cases == 452 and mean.left_out == []
    # se = sqrt(se_1^2 + se_2^2) / 2 with se_f = the larger side of the interval / z: 0.05 and
    # 0.4 (0.5 - 0.1, not the half width 0.25: the Wilson interval is lopsided near 0).
    se = math.sqrt((0.05 / WILSON_Z) ** 2 + (0.4 / WILSON_Z) ** 2) / 2
    assert mean.ci_low == pytest.approx(0.5 - WILSON_Z * se)
    assert mean.ci_high == pytest.approx(0.5 + WILSON_Z * se)


def test_a_family_under_the_minimum_n_is_shown_but_not_in_the_mean() -> None:
    big = FamilyScore(family="presence", score=0.5, ci_low=0.45, ci_high=0.55, n=432)
    tiny = FamilyScore(family="closest_object", score=1.0, ci_low=0.44, ci_high=1.0, n=3)
    mean = family_mean([big, tiny])
    assert MIN_FAMILY_N == 20
    assert mean is not None and mean.mean == pytest.approx(0.5) and mean.n_families == 1
    assert [f.family for f in mean.left_out] == ["closest_object"] and mean.n_cases == 432
    assert mean.ci_low == pytest.approx(0.45) and mean.ci_high == pytest.approx(0.55)
    # At the bound a family counts; lowering the bound lets the small one in.
    assert family_mean([big, tiny], min_n=3).n_families == 2  # type: ignore[union-attr]
    assert family_mean([tiny]) is None  # no family large enough: no headline
    with pytest.raises(ValueError, match="min_n"):
        family_mean([big], min_n=0)


def test_families_without_cases_do_not_count_and_no_family_has_no_mean() -> None:
    empty = FamilyScore(family="x", score=None, n=0)
    one = FamilyScore(family="y", kind="mra", score=0.4, n=30)
    mean = family_mean([empty, one])
    assert mean is not None and mean.n_families == 1 and mean.mean == pytest.approx(0.4)
    assert mean.left_out == []  # no case: neither in the mean nor left out
    assert mean.ci_low is None and mean.ci_high is None  # an MRA family without an interval
    assert family_mean([empty]) is None
    with pytest.raises(ValueError, match="once"):
        family_mean([one, one])


def test_interval_is_clipped_to_zero_and_one() -> None:
    mean = family_mean([FamilyScore(family="a", score=1.0, ci_low=0.8, ci_high=1.0, n=20)])
    assert mean is not None and mean.ci_high == 1.0 and mean.ci_low == pytest.approx(0.8)


def test_vqa_report_carries_the_family_mean_unlike_the_pooled_accuracy() -> None:
    # presence: 60 cases, half "yes", all answered right; closest_object: 20 cases, gold "a" or
    # "b", all answered wrong; 12 object_distance cases (under the minimum n).
    rows = [{"case_id": f"p{i}", "family": "presence", "recording": "r", "frame_index": i,
             "choices": ["yes", "no"], "answer": "yes" if i % 2 else "no",
             "prediction": "yes" if i % 2 else "no"} for i in range(60)]
    rows += [{"case_id": f"c{i}", "family": "closest_object", "recording": "r",
              "frame_index": i, "choices": ["a", "b"], "answer": "a" if i % 2 else "b",
              "prediction": "b" if i % 2 else "a"} for i in range(20)]
    rows += [{"case_id": f"d{i}", "family": "object_distance", "recording": "r",
              "frame_index": i, "choices": ["a", "b"], "answer": "ab"[i % 2], "prediction": "a"}
             for i in range(12)]
    # One image_coverage case: one gold answer, nothing a prior could not get.
    rows.append({"case_id": "i", "family": "image_coverage", "recording": "r",
                 "frame_index": 0, "choices": ["a", "b"], "answer": "a", "prediction": "a"})
    report = vqa_accuracy(rows)
    assert report.overall.accuracy == pytest.approx(67 / 93)
    assert report.family_mean is not None
    assert report.family_mean.mean == pytest.approx(0.5)  # (1 + 0) / 2
    assert [f.family for f in report.family_mean.families] == ["closest_object", "presence"]
    assert [f.family for f in report.family_mean.left_out] == ["object_distance"]
    assert [f.family for f in report.family_mean.uninformative] == ["image_coverage"]
    assert report.rows[0].choices == ["yes", "no"]  # rows keep the choices shown
