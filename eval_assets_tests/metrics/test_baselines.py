"""Frequency and median baselines, and beating a baseline by more than the MDD."""

from __future__ import annotations

import pytest

from eval_assets.metrics.baselines import (
    compare_to_baseline,
    frequency_answer,
    frequency_scores,
    median_baseline,
)
from eval_assets.metrics.numeric import mean_relative_accuracy


def test_frequency_answer_is_the_mode_with_ties_broken_by_text() -> None:
    assert frequency_answer(["no", "yes", "yes"]) == "yes"
    assert frequency_answer(["right", "left"]) == "left"
    assert frequency_answer(["left", "right"]) == "left"  # order of the labels does not matter
    mode, scores = frequency_scores(["b", "a", "b", "c"])
    assert mode == "b" and scores == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="at least one"):
        frequency_answer([])


def test_median_baseline_is_scored_by_mean_relative_accuracy() -> None:
    median, scores = median_baseline([1.0, 2.0, 10.0])
    assert median == 2.0
    assert scores == [mean_relative_accuracy(2.0, t) for t in (1.0, 2.0, 10.0)]
    assert scores[1] == 1.0 and scores[2] == 0.0


def test_a_clear_win_on_many_frames_beats_the_baseline_and_a_small_one_does_not() -> None:
    keys = list(range(200))
    model = [1.0] * 180 + [0.0] * 20
    baseline = [1.0] * 100 + [0.0] * 100
    win = compare_to_baseline(keys, model, baseline)
    assert win.score == pytest.approx(0.9) and win.baseline == pytest.approx(0.5)
    assert win.difference == pytest.approx(0.4)
    assert win.mdd is not None and win.mdd < 0.4
    assert win.beats
    small = compare_to_baseline(keys[:10], [1.0] * 6 + [0.0] * 4, [1.0] * 5 + [0.0] * 5)
    assert not small.beats and small.mdd is not None and small.mdd > 0.1


def test_continuous_scores_use_a_normal_mdd() -> None:
    keys = list(range(100))
    model = [0.8 + 0.1 * (i % 2) for i in keys]
    baseline = [0.3 + 0.1 * (i % 3 == 0) for i in keys]
    c = compare_to_baseline(keys, model, baseline)
    assert c.mdd is not None and 0 < c.mdd < 0.1 and c.beats
    same = compare_to_baseline(keys, baseline, baseline)
    assert same.mdd is None and not same.beats  # no variance: not estimable, never "beats"
    with pytest.raises(ValueError, match="pair up"):
        compare_to_baseline(keys, model, baseline[:3])
