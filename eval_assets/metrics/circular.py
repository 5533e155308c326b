"""CircularEval and position bias: each multiple-choice case asked once per rotation of its choices.

A case with k choices ``c`` is asked k times; rotation ``r`` shows ``c[r:] + c[:r]`` (rotation 0 is
the case as published, the dimOS-comparable answer). Over its k rotations the gold answer sits
once at every displayed position, so a model that answers by content picks each position equally
often, and one that answers by position cannot be right every time.

Definitions (per model, overall and per question family; a row is a case):

- **Included cases**: every rotation 0 .. k-1 has a record (a failed call or an unparseable reply
  counts, as a wrong answer). A case some of whose rotations were never asked is *excluded* and
  counted (``not_asked``), never assumed right or wrong.
- **CircularEval accuracy** = robust / n over the included cases, robust meaning every rotation
  was answered correctly; a 95% Wilson interval over the effective sample size, clustered by
  frame (:func:`eval_assets.metrics.stats.clustered_wilson`). ``chance`` = mean of k^-k, the
  rate of a uniform random guesser.
- **Accuracy under rotation** = correct answers / all answers of the included cases (each case
  contributes k), with the same frame-clustered interval; ``original_accuracy`` is rotation 0
  alone on the same cases, for comparison.
- **Position bias**, over the answers of the included cases that named a choice (m of them):
  ``answer_share[p]`` = answers choosing displayed position p / m, ``gold_share[p]`` = those same
  prompts whose gold answer is at p / m. ``max_gap`` = max over p of |answer - gold share|, with
  its position (1-based). Pearson's chi-square goodness of fit of the chosen-position counts
  against the gold-position counts (the expected counts of a model with no position preference),
  df = positions with a gold count - 1, p from the chi-square distribution (scipy). It treats
  answers as independent. None (n/a) when m = 0, fewer than two positions hold a gold answer, or
  a position was chosen that never holds one (the expected count is 0).

Empty denominators are None ("n/a"), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator

from eval_assets.metrics.stats import clustered_wilson
from eval_assets.metrics.vqa import GoldCase, RowStatus, match_choice
from eval_assets.schemas.predictions import rotate_choices

__all__ = [
    "CircularCase",
    "CircularGroupStats",
    "CircularReport",
    "CircularRow",
    "PositionBias",
    "circular_eval",
    "circular_group_stats",
    "position_bias",
    "score_circular_case",
]


class CircularCase(GoldCase):
    """One case with its gold answer and the reply to each rotation that was asked.

    ``replies[r]`` is the raw reply to rotation ``r`` (None: the call failed); a rotation that is
    not a key was not asked. ``choices`` are in the published order (rotation 0).
    """

    replies: dict[int, str | None]

    @model_validator(mode="after")
    def _rotations_exist(self) -> CircularCase:
        bad = sorted(r for r in self.replies if not 0 <= r < len(self.choices))
        if bad:
            raise ValueError(f"case {self.case_id!r}: rotations {bad} do not exist for "
                             f"{len(self.choices)} choices (0 .. {len(self.choices) - 1})")
        return self


class CircularRow(BaseModel):
    """How one case fared under every rotation; index r of each list is rotation r."""

    case_id: str
    family: str
    recording: str
    frame_index: int
    n_choices: int
    gold_index: int = Field(description="position of the gold answer in the published order")
    statuses: list[RowStatus | None] = Field(description="per rotation; None: not asked")
    chosen_positions: list[int | None] = Field(
        description="0-based displayed position the reply named; None: not asked, failed or "
                    "unparseable")

    @property
    def asked(self) -> bool:
        """Every rotation has a record."""
        return all(s is not None for s in self.statuses)

    @property
    def robust(self) -> bool:
        """Every rotation was asked and answered correctly."""
        return all(s == "correct" for s in self.statuses)

    def gold_position(self, rotation: int) -> int:
        """0-based displayed position of the gold answer in rotation ``rotation``."""
        return (self.gold_index - rotation) % self.n_choices


class PositionBias(BaseModel):
    """Chosen displayed positions against gold positions on the same prompts (1-based lists)."""

    n: int = Field(description="answers that named a choice (the sample m)")
    answer_counts: list[int]
    gold_counts: list[int]
    answer_share: list[float | None]
    gold_share: list[float | None]
    max_gap: float | None = Field(description="max over positions of |answer - gold share|")
    max_gap_position: int | None = Field(description="1-based position of max_gap")
    chi2: float | None
    df: int | None
    p_value: float | None


class CircularGroupStats(BaseModel):
    """CircularEval, accuracy under rotation and position bias of one group of cases."""

    n: int = Field(description="included cases: every rotation asked")
    not_asked: int = Field(description="cases excluded because a rotation was never asked")
    robust: int
    accuracy: float | None = Field(description="CircularEval: robust / n; None when n = 0")
    ci_low: float | None
    ci_high: float | None
    n_frames: int
    design_effect: float | None
    chance: float | None = Field(description="mean of k^-k over the included cases")
    n_answers: int = Field(description="answers of the included cases (k per case)")
    correct_answers: int
    failed_calls: int
    parse_failures: int
    rotation_accuracy: float | None = Field(description="correct_answers / n_answers")
    rotation_ci_low: float | None
    rotation_ci_high: float | None
    original_accuracy: float | None = Field(
        description="rotation 0 alone on the same included cases")
    bias: PositionBias


class CircularReport(BaseModel):
    """CircularEval overall and per family (sorted by name), with every case's row."""

    overall: CircularGroupStats
    by_family: dict[str, CircularGroupStats]
    rows: list[CircularRow]


def score_circular_case(case: CircularCase) -> CircularRow:
    """Map each rotation's reply to a displayed choice and score it against the gold answer."""
    k = len(case.choices)
    statuses: list[RowStatus | None] = []
    chosen: list[int | None] = []
    for r in range(k):
        if r not in case.replies:
            statuses.append(None)
            chosen.append(None)
            continue
        reply = case.replies[r]
        if reply is None:
            statuses.append("failed_call")
            chosen.append(None)
            continue
        shown = rotate_choices(case.choices, r)
        match = match_choice(reply, shown)
        if match.choice is None:
            statuses.append("parse_failure")
            chosen.append(None)
            continue
        statuses.append("correct" if match.choice == case.answer else "incorrect")
        chosen.append(shown.index(match.choice))
    return CircularRow(case_id=case.case_id, family=case.family, recording=case.recording,
                       frame_index=case.frame_index, n_choices=k,
                       gold_index=case.choices.index(case.answer), statuses=statuses,
                       chosen_positions=chosen)


def _chi2_sf(statistic: float, df: int) -> float:
    # scipy.special's chdtrc is the function scipy.stats.chi2.sf calls (same values, bit for bit:
    # 20,000 random (statistic, df) pairs compared); importing scipy.stats for it took 0.76 s of
    # every cell's run (1.2 s of the circular_eval step's 1.7), scipy.special 0.13 s.
    from scipy.special import chdtrc

    return float(chdtrc(df, statistic))


def position_bias(rows: Sequence[CircularRow]) -> PositionBias:
    """Chosen vs gold displayed positions over every parsed answer of ``rows``."""
    width = max((r.n_choices for r in rows), default=0)
    chosen = [0] * width
    gold = [0] * width
    for row in rows:
        for rotation, position in enumerate(row.chosen_positions):
            if position is None:
                continue
            chosen[position] += 1
            gold[row.gold_position(rotation)] += 1
    m = sum(chosen)
    answer_share = [c / m if m else None for c in chosen]
    gold_share = [g / m if m else None for g in gold]
    max_gap = position = None
    if m:
        gaps = [abs(a - g) for a, g in zip(chosen, gold, strict=True)]
        best = max(range(width), key=lambda p: (gaps[p], -p))
        max_gap, position = gaps[best] / m, best + 1
    statistic = df = p_value = None
    tested = [p for p in range(width) if gold[p] > 0]
    if m and len(tested) >= 2 and all(chosen[p] == 0 for p in range(width) if gold[p] == 0):
        statistic = math.fsum((chosen[p] - gold[p]) ** 2 / gold[p] for p in tested)
        df = len(tested) - 1
        p_value = _chi2_sf(statistic, df)
    return PositionBias(n=m, answer_counts=chosen, gold_counts=gold, answer_share=answer_share,
                        gold_share=gold_share, max_gap=max_gap, max_gap_position=position,
                        chi2=statistic, df=df, p_value=p_value)


def _frame(row: CircularRow) -> tuple[str, int]:
    return (row.recording, row.frame_index)


def circular_group_stats(rows: Iterable[CircularRow]) -> CircularGroupStats:
    """The statistics of a group of case rows (of one result or pooled over many)."""
    rows = list(rows)
    included = [r for r in rows if r.asked]
    n = len(included)
    robust = sum(1 for r in included if r.robust)
    interval = clustered_wilson([_frame(r) for r in included], [r.robust for r in included])
    answers = [(_frame(r), s) for r in included for s in r.statuses]
    correct = sum(1 for _, s in answers if s == "correct")
    rotated = clustered_wilson([k for k, _ in answers], [s == "correct" for _, s in answers])
    original = sum(1 for r in included if r.statuses[0] == "correct")
    return CircularGroupStats(
        n=n, not_asked=len(rows) - n, robust=robust,
        accuracy=robust / n if n else None,
        ci_low=interval.low if interval else None,
        ci_high=interval.high if interval else None,
        n_frames=interval.n_clusters if interval else 0,
        design_effect=interval.design_effect if interval else None,
        chance=math.fsum(r.n_choices ** -r.n_choices for r in included) / n if n else None,
        n_answers=len(answers), correct_answers=correct,
        failed_calls=sum(1 for _, s in answers if s == "failed_call"),
        parse_failures=sum(1 for _, s in answers if s == "parse_failure"),
        rotation_accuracy=correct / len(answers) if answers else None,
        rotation_ci_low=rotated.low if rotated else None,
        rotation_ci_high=rotated.high if rotated else None,
        original_accuracy=original / n if n else None,
        bias=position_bias(included),
    )


def circular_eval(cases: Iterable[CircularCase | Mapping[str, Any]]) -> CircularReport:
    """Score every case under every rotation asked; overall and per family (sorted by name).

    Cases may be :class:`CircularCase` or mappings with its fields; rows keep input order.
    """
    rows: list[CircularRow] = []
    for position, case in enumerate(cases):
        try:
            parsed = case if isinstance(case, CircularCase) else CircularCase.model_validate(case)
        except ValueError as exc:
            raise ValueError(f"CircularEval case #{position} is invalid: {exc}") from exc
        rows.append(score_circular_case(parsed))
    families: dict[str, list[CircularRow]] = {}
    for row in rows:
        families.setdefault(row.family, []).append(row)
    return CircularReport(
        overall=circular_group_stats(rows),
        by_family={f: circular_group_stats(rs) for f, rs in sorted(families.items())},
        rows=rows,
    )
