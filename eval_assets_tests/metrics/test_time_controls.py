"""TimeFlip and RepeatFrames statistics on synthetic cases carrying the motion families' names:
what counts as right for a number, consistency, agreement and the share changed."""

from __future__ import annotations

import numpy as np
import pytest

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.metrics.time_controls import (
    ANGLE_RIGHT_DEG,
    ZERO_TAU_M,
    TimeCase,
    numeric_right,
    read_reply,
    time_eval,
)
from eval_assets.time_controls import AnswerKind, Control, transform_of

TURNS = ["left", "right", "no turn"]
ROUTES = ["forward, turn left", "turn left, forward", "forward, turn right",
          "turn right, forward"]


def _case(family: str, kind: AnswerKind, gold: str, reply: str | None, variant: str | None,
          control: Control = "time_flip", choices: list[str] | None = None,
          asked: bool = True, frame: int = 0) -> TimeCase:
    transform = transform_of(family, control)
    assert transform is not None
    shown = None if choices is None else [transform(c) for c in choices]
    return TimeCase(case_id=f"{family}-{frame}", family=family, recording="r",
                    frame_index=frame, kind=kind, choices=choices, answer=gold, reply=reply,
                    variant_asked=asked, variant_choices=shown, variant_answer=transform(gold),
                    variant_reply=variant)


def _mean_angular_accuracy(pred: float, truth: float) -> float:
    # motion.md's definition, written out: the mean over t in 5..50 of 1[wrapped |d| <= t].
    d = abs((pred - truth + 180.0) % 360.0 - 180.0)
    return float(np.mean([d <= t for t in range(5, 55, 5)]))


def test_a_number_is_right_exactly_when_its_metric_scores_at_least_half() -> None:
    for truth in (0.8, 2.0, 3.0, 7.5):
        for pred in np.linspace(0.0, 2.5 * truth, 251):
            assert numeric_right("length", float(pred), truth) == \
                (mean_relative_accuracy(float(pred), truth) >= 0.5)
    for truth in (30.0, 90.0, 150.0, -170.0):
        for pred in np.linspace(-360.0, 360.0, 721):
            assert numeric_right("angle", float(pred), truth) == \
                (_mean_angular_accuracy(float(pred), truth) >= 0.5)
    assert numeric_right("angle", 350.0, -10.0) and ANGLE_RIGHT_DEG == 30.0
    assert numeric_right("count", 3.0, 3.0) and not numeric_right("count", 2.0, 3.0)


def test_a_zero_distance_follows_osi_benchs_tau_rule() -> None:
    assert numeric_right("length", 0.0, 0.0) and numeric_right("length", 0.29, 0.0)
    assert numeric_right("length", 0.35, 0.0)  # MRA against tau: 0.05 / 0.30 off
    assert not numeric_right("length", 0.5, 0.0) and not numeric_right("length", -0.1, 0.0)
    assert ZERO_TAU_M == 0.30


def test_time_flip_consistency_and_agreement_per_family() -> None:
    report = time_eval([
        # Reads the frames: left, then right when reversed.
        _case("turn_direction", "choice", "left", "left", "right", choices=TURNS),
        # Answers from the wording: the same side both ways.
        _case("turn_direction", "choice", "left", "left", "left", choices=TURNS, frame=1),
        _case("turn_direction", "choice", "no turn", "no turn", "no turn", choices=TURNS,
              frame=2),
        _case("route_sequence", "choice", "forward, turn left", "forward, turn left",
              "turn right, forward", choices=ROUTES, frame=3),
        _case("camera_displacement_m", "length", "2.0", "2.1 m", "1.9", frame=4),
        _case("camera_displacement_m", "length", "2.0", "2.1", "5", frame=5),  # reversed wrong
        _case("path_length_m", "length", "3.0", "3", None, frame=6),  # reversed call failed
        _case("turn_angle_deg", "angle", "90", "80 degrees", "95", frame=7),
        _case("same_place", "choice", "yes", "yes", "no", choices=["yes", "no"], frame=8),
        _case("path_length_m", "length", "3.0", "3", None, asked=False, frame=9),
    ], "time_flip")
    o = report.overall
    assert (o.n, o.not_asked, o.consistent) == (9, 1, 5)
    assert o.consistency == pytest.approx(5 / 9)
    assert o.original_accuracy == pytest.approx(1.0)
    assert o.variant_accuracy == pytest.approx(5 / 9)
    # Both parsed: 8 (not the failed call); disagreeing: the wording one, the 5 m, the yes/no.
    assert (o.n_compared, o.agreement) == (8, pytest.approx(5 / 8))
    turn = report.by_family["turn_direction"]
    assert (turn.n, turn.consistent, turn.agreement) == (3, 2, pytest.approx(2 / 3))
    assert report.by_family["route_sequence"].consistency == 1.0
    assert report.by_family["path_length_m"].not_asked == 1
    assert list(report.by_family) == sorted(report.by_family)


def test_repeat_frames_reports_the_share_whose_answer_changed() -> None:
    report = time_eval([
        _case("object_count_across_frames", "count", "3", "3", "6", "repeat_frames"),
        _case("object_count_across_frames", "count", "3", "3", "3", "repeat_frames", frame=1),
        _case("appearance_order", "choice", "chair, table", "chair, table", "chair, table",
              "repeat_frames", choices=["chair, table", "table, chair"], frame=2),
        _case("turn_direction", "choice", "left", "left", "I cannot tell", "repeat_frames",
              choices=TURNS, frame=3),  # unparseable: not compared, wrong
        _case("path_length_m", "length", "4.0", "4.0", "4.4", "repeat_frames", frame=4),
    ], "repeat_frames")
    o = report.overall
    assert (o.n, o.n_compared) == (5, 4)
    assert o.changed == pytest.approx(2 / 4)  # the doubled count and the 4.0 -> 4.4
    assert o.consistent == 3 and o.variant_accuracy == pytest.approx(3 / 5)
    assert report.by_family["object_count_across_frames"].changed == pytest.approx(0.5)
    assert report.rows[3].variant == "parse_failure" and report.rows[3].agree is None


def test_replies_are_read_in_the_familys_unit() -> None:
    # Angles in degrees as a magnitude (turn_angle_deg asks "by how many degrees").
    assert read_reply("angle", "It turned left by about 80 degrees", None) == (None, 80.0)
    assert read_reply("angle", "-90", None) == (None, 90.0)
    assert read_reply("length", "150 cm", None) == (None, 1.5)
    # A hedge is no answer, never its first number.
    assert read_reply("length", "2 or 3 m", None) == ("parse_failure", None)
    assert read_reply("count", "3 chairs", None) == (None, 3.0)
