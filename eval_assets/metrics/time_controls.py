"""TimeFlip and RepeatFrames: a multi-frame case asked as generated and again with its frames
reversed (gold: the family's transform) or each shown twice (gold unchanged).

Definitions (per model, overall and per family; a row is a case the control covers):

- **Included cases**: both the original and the variant have a record (a failed call or an
  unparseable reply counts, as a wrong answer). A case whose variant was never asked is
  excluded and counted (``not_asked``).
- **Right**: a choice reply names the gold choice (exactly one choice, as VQA accuracy reads it);
  a count or a distance is right when its Mean Relative Accuracy (the numeric metric's) is at
  least 0.5, i.e. a relative error of at most 0.30; a distance whose truth is below
  :data:`ZERO_TAU_M` follows OSI-Bench's rule for a truth of 0 (a reply in [0, τ) scores 1, any
  other is scored by MRA against τ); an angle is right when its mean angular accuracy (motion.md)
  is at least 0.5, i.e. the wrapped difference is at most 30°.
- **Consistency** = cases right both ways / n, with the frame-clustered Wilson interval.
- **Original / variant accuracy**: each side alone on the same cases.
- **Agreement**: among the cases where both replies parsed, the share whose variant answer is
  what the original answer becomes under the control: TimeFlip, the transform of the original
  choice, or a number right against the original number by the rule above; RepeatFrames, the
  very same choice or number. RepeatFrames reports its complement, the share **changed**.

Empty denominators are None ("n/a"), never 0. The rows and figures are the paired controls'
(:mod:`eval_assets.metrics.paired`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from eval_assets.metrics.numeric import mean_relative_accuracy, parse_numeric_reply
from eval_assets.metrics.paired import PairedReport, PairedRow, paired_report
from eval_assets.metrics.vqa import RowStatus, match_choice
from eval_assets.time_controls import AnswerKind, Control, transform_of

__all__ = ["ANGLE_RIGHT_DEG", "ZERO_TAU_M", "TimeCase", "numeric_right", "read_reply",
           "same_answer", "score_time_case", "time_eval"]

ZERO_TAU_M = 0.30
"""OSI-Bench's τ for a distance truth of (about) 0, in metres (motion.md, Scoring)."""
ANGLE_RIGHT_DEG = 30.0
"""The widest wrapped difference whose mean angular accuracy (tolerances 5°..50°) is >= 0.5."""
_RIGHT_MRA = 0.5


def numeric_right(kind: AnswerKind, pred: float, truth: float) -> bool:
    """Whether a number answers ``truth`` right (module docstring): MRA >= 0.5 for counts and
    distances (OSI's τ rule below :data:`ZERO_TAU_M` for distances), a wrapped difference of at
    most :data:`ANGLE_RIGHT_DEG` for angles."""
    if kind == "angle":
        return abs((pred - truth + 180.0) % 360.0 - 180.0) <= ANGLE_RIGHT_DEG
    if kind == "length" and truth < ZERO_TAU_M:
        return 0.0 <= pred < ZERO_TAU_M or mean_relative_accuracy(pred, ZERO_TAU_M) >= _RIGHT_MRA
    if truth <= 0:  # MRA divides by the truth; a count of 0 is right only as 0
        return pred == truth
    return mean_relative_accuracy(pred, truth) >= _RIGHT_MRA


Answer = str | float


def read_reply(kind: AnswerKind, reply: str | None,
               choices: list[str] | None) -> tuple[Literal["failed_call", "parse_failure"] | None,
                                                   Answer | None]:
    """A reply's answer: the one choice it names, or its number (distances in metres, counts as
    written, angles as a magnitude: the one angle family the controls score, ``turn_angle_deg``,
    asks "by how many degrees", so "-90" and "90 degrees" are the same answer); the failure when
    there is none."""
    if reply is None:
        return "failed_call", None
    if kind == "choice":
        chosen = match_choice(reply, choices or []).choice
        return ("parse_failure", None) if chosen is None else (None, chosen)
    unit = "m" if kind == "length" else "deg" if kind == "angle" else None
    parsed = parse_numeric_reply(reply, unit, magnitude=kind == "angle")
    if parsed is None:
        return "parse_failure", None
    return None, parsed.value


class TimeCase(BaseModel):
    """A case a time control covers, with the reply to it and to its variant (None: failed
    call; ``variant_asked`` False: the variant was never asked)."""

    case_id: str
    family: str
    recording: str
    frame_index: int = Field(description="the first frame shown: the cluster of the interval")
    kind: AnswerKind
    choices: list[str] | None = None
    answer: str
    reply: str | None
    variant_asked: bool
    variant_choices: list[str] | None = None
    variant_answer: str = Field(description="the gold of the variant (the transformed gold)")
    variant_reply: str | None = None


def _judge(kind: AnswerKind, reply: str | None, choices: list[str] | None,
           gold: str) -> tuple[RowStatus, Answer | None]:
    failure, value = read_reply(kind, reply, choices)
    if failure is not None or value is None:
        return failure or "parse_failure", None
    if isinstance(value, str):
        return ("correct" if value == gold else "incorrect"), value
    return ("correct" if numeric_right(kind, value, float(gold)) else "incorrect"), value


def same_answer(control: Control, case: TimeCase, original: Answer, variant: Answer) -> bool:
    """Whether the variant's answer is what the original's becomes under ``control``: TimeFlip,
    the family's transform of the original choice, or a number right against the original
    number (:func:`numeric_right`); RepeatFrames, the very same choice or number."""
    if control == "repeat_frames":
        return original == variant
    if isinstance(original, str):
        transform = transform_of(case.family, control)
        if transform is None:
            raise ValueError(f"family {case.family!r} has no TimeFlip transform; it is not scored")
        return transform(original) == variant
    assert isinstance(variant, float)
    return numeric_right(case.kind, variant, original)


def score_time_case(case: TimeCase, control: Control) -> PairedRow:
    """Score the original reply against the gold and the variant's against its gold, and
    whether the two answers agree (:func:`same_answer`)."""
    original, chosen = _judge(case.kind, case.reply, case.choices, case.answer)
    variant: RowStatus | None = None
    agree = None
    if case.variant_asked:
        variant, answered = _judge(case.kind, case.variant_reply, case.variant_choices,
                                   case.variant_answer)
        if chosen is not None and answered is not None:
            agree = same_answer(control, case, chosen, answered)
    return PairedRow(case_id=case.case_id, family=case.family, recording=case.recording,
                     frame_index=case.frame_index, original=original, variant=variant,
                     agree=agree)


def time_eval(cases: Iterable[TimeCase], control: Control) -> PairedReport:
    """Score every case of ``control`` both ways; overall and per family (sorted by name)."""
    return paired_report([score_time_case(c, control) for c in cases], PairedReport)
