"""MCQ accuracy, compatible with NVIDIA AVLM ``avlm/evals/mcq/eval_mcq.py``, plus a lenient tier.

Strict (the headline, byte-compatible ``mcq/mcq_results.json``): only ``evaluation_type == "mcq"``
rows count; ``inference_status != "success"`` is an inference failure; a ground truth without a
letter warns and the row is counted nowhere; a prediction without a letter is a parse failure; the
letter must open the answer as ``(X)`` (see :data:`STRICT_ANSWER_RE`). ``pct_correct`` divides by
every counted row, failures included, and is 0.0 when there are none.

Lenient (``mcq/mcq_lenient_results.json``, reported separately): a prediction the strict regex
rejects may still be read as a bare letter (``"C"``, ``"c."``), an answer line (``"Answer: (C)"``,
``"The answer is C"``) or the exact text of one choice; every row's tier is recorded. Ground truth
is always read strictly so both tiers share one denominator, and lenient ⊇ strict.

Row schema: see :mod:`eval_assets.metrics.avlm_rows`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from eval_assets.layout import AVLM_MCQ_LENIENT_RESULTS, AVLM_MCQ_RESULTS, AVLM_PREDICTIONS
from eval_assets.metrics.avlm_rows import (
    PredictionRow,
    ScoringWarning,
    read_predictions,
    write_avlm_json,
)

STRICT_ANSWER_RE = re.compile(r"^\s*(?:\*\*)?\(([a-zA-Z])\)(?:\*\*)?(?=\s|$)")

# A line that states the answer: "Answer: (C)", "**Final answer:** C.", "The answer is c".
# A bare letter must be followed by punctuation or the end, so "Answer: a dog" is not "a".
_ANSWER_LINE_RE = re.compile(
    r"^[ \t]*(?:\*\*)?(?:the[ \t]+)?(?:final[ \t]+|correct[ \t]+)?answer(?:[ \t]+is)?[ \t]*"
    r"(?:\*\*)?[ \t]*[:\-]?[ \t]*(?:\*\*)?[ \t]*"
    r"(?:\(([a-z])\)|([a-z])(?=[ \t]*(?:\*\*)?[ \t]*(?:[.,;:!]|$)))",
    re.IGNORECASE | re.MULTILINE,
)
# The whole reply is one letter: "C", "c.", "C)", "(C", "**C**".
_BARE_LETTER_RE = re.compile(r"^\s*(?:\*\*)?\(?([a-z])\)?(?:\*\*)?\s*[.:)]?\s*$", re.IGNORECASE)
# "(A) text" markers in a question, at the start or after whitespace.
_CHOICE_MARK_RE = re.compile(r"(?:^|(?<=\s))\(([A-Za-z])\)[ \t]*")

_COUNT_KEYS = ("num_infer_failed", "num_parse_failed", "num_correct", "num_incorrect")

# Outcome of a row whose ground truth has no letter: listed, but counted nowhere.
GT_WITHOUT_LETTER = "gt_without_letter"


class Tier(StrEnum):
    """How a lenient answer letter was found, strictest first."""

    STRICT = "strict"
    ANSWER_LINE = "answer_line"
    BARE_LETTER = "bare_letter"
    CHOICE_TEXT = "choice_text"


def parse_mcq_answer(text: str) -> str | None:
    """AVLM's letter extraction: ``(X)`` opening the text (after spaces and ``**``), lower-cased."""
    match = STRICT_ANSWER_RE.match(text)
    return match.group(1).lower() if match else None


def parse_choices(question: str) -> list[str] | None:
    """Choice texts listed as ``(A) … (B) …`` in a question, in letter order, or None.

    Takes the last run of consecutive letters starting at ``(A)`` with at least two choices; a
    choice's text ends at the next marker or the end of its line.
    """
    marks = list(_CHOICE_MARK_RE.finditer(question))
    best: list[str] | None = None
    run: list[str] = []
    for i, mark in enumerate(marks):
        letter = mark.group(1).lower()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(question)
        text = question[mark.end():end].split("\n", 1)[0].strip()
        if letter == "a":
            run = [text]
        elif run and letter == chr(ord("a") + len(run)):
            run.append(text)
        else:
            run = []
        if len(run) >= 2:
            best = list(run)
    return best


def _normalise_choice(text: str) -> str:
    """Case-, space- and final-period-insensitive form for exact choice-text matching."""
    text = text.strip()
    if text.startswith("**") and text.endswith("**") and len(text) >= 4:
        text = text[2:-2]
    return " ".join(text.casefold().split()).rstrip(".").strip()


def extract_answer_lenient(
    text: str | None, choices: Sequence[str] | None = None
) -> tuple[str | None, Tier | None]:
    """The answer letter and the tier that found it, or ``(None, None)``.

    With ``choices`` known, a lenient letter must name one of them; the strict tier is taken as is
    so that the lenient count never falls below the strict one.
    """
    if text is None:
        return None, None
    strict = parse_mcq_answer(text)
    if strict is not None:
        return strict, Tier.STRICT
    valid = {chr(ord("a") + i) for i in range(len(choices))} if choices else None

    def ok(letter: str) -> bool:
        return valid is None or letter in valid

    # The last answer line wins: chain-of-thought replies end with their final answer.
    for match in reversed(list(_ANSWER_LINE_RE.finditer(text))):
        letter = (match.group(1) or match.group(2)).lower()
        if ok(letter):
            return letter, Tier.ANSWER_LINE
    bare = _BARE_LETTER_RE.match(text)
    if bare and ok(bare.group(1).lower()):
        return bare.group(1).lower(), Tier.BARE_LETTER
    if choices:
        wanted = _normalise_choice(text)
        hits = [i for i, choice in enumerate(choices) if _normalise_choice(choice) == wanted]
        if wanted and len(hits) == 1:
            return chr(ord("a") + hits[0]), Tier.CHOICE_TEXT
    return None, None


def row_choices(row: PredictionRow) -> list[str] | None:
    """The row's choices: its ``choices`` field, else those listed in its question text."""
    if row.choices:
        return list(row.choices)
    return parse_choices(row.question_text())


@dataclass
class _Tally:
    num_infer_failed: int = 0
    num_parse_failed: int = 0
    num_correct: int = 0
    num_incorrect: int = 0

    def add(self, outcome: str) -> None:
        setattr(self, f"num_{outcome}", getattr(self, f"num_{outcome}") + 1)

    def as_result(self) -> dict[str, Any]:
        """The six AVLM keys, in AVLM's order."""
        total = sum(getattr(self, key) for key in _COUNT_KEYS)
        return {
            "total_mcq_questions": total,
            **{key: getattr(self, key) for key in _COUNT_KEYS},
            "pct_correct": self.num_correct / total if total else 0.0,
        }


@dataclass(frozen=True)
class McqRowOutcome:
    """One MCQ row: correct, incorrect, parse_failed, infer_failed or gt_without_letter."""

    row: PredictionRow
    outcome: str
    gt_letter: str | None
    pred_letter: str | None
    tier: Tier | None


def _mcq_rows(rows: Iterable[PredictionRow]) -> Iterable[tuple[PredictionRow, str | None]]:
    """MCQ rows with their strict ground-truth letter (None: inference failed, or no letter).

    Rows without a ground-truth letter are still yielded (with a warning) because AVLM registers
    their class, which fixes the ``per_class`` order and can leave a class with zero counts.
    """
    for row in rows:
        if row.evaluation_type is None:
            warnings.warn(f"{row.source}: missing evaluation_type (id={row.id!r}); row skipped",
                          ScoringWarning, stacklevel=3)
            continue
        if row.evaluation_type != "mcq":
            continue
        row.require("class", "inference_status", why="every MCQ row needs it")
        if row.inference_status != "success":
            yield row, None
            continue
        row.require("ground_truth", "prediction", why="a successful MCQ row needs it")
        gt = parse_mcq_answer(row.ground_truth) if row.ground_truth is not None else None
        if gt is None:
            warnings.warn(
                f"{row.source}: ground_truth {row.ground_truth!r} has no '(X)' letter "
                f"(index={row.index!r}, id={row.id!r}); row counted nowhere",
                ScoringWarning, stacklevel=3)
        yield row, gt


def grade_mcq(rows: Iterable[PredictionRow], *, lenient: bool) -> list[McqRowOutcome]:
    """Grade every counted MCQ row, in input order, strictly or leniently."""
    graded: list[McqRowOutcome] = []
    for row, gt in _mcq_rows(rows):
        if row.inference_status != "success":
            graded.append(McqRowOutcome(row, "infer_failed", None, None, None))
            continue
        if gt is None:
            graded.append(McqRowOutcome(row, GT_WITHOUT_LETTER, None, None, None))
            continue
        if lenient:
            pred, tier = extract_answer_lenient(row.prediction, row_choices(row))
        else:
            pred = parse_mcq_answer(row.prediction) if row.prediction is not None else None
            tier = Tier.STRICT if pred is not None else None
        outcome = "parse_failed" if pred is None else "correct" if pred == gt else "incorrect"
        graded.append(McqRowOutcome(row, outcome, gt, pred, tier))
    return graded


def _tally(graded: Sequence[McqRowOutcome]) -> tuple[_Tally, dict[Any, _Tally]]:
    overall = _Tally()
    per_class: dict[Any, _Tally] = {}
    for item in graded:
        # The class is registered even for an uncounted row, as AVLM does.
        tally = per_class.setdefault(item.row.question_class, _Tally())
        if item.outcome != GT_WITHOUT_LETTER:
            overall.add(item.outcome)
            tally.add(item.outcome)
    return overall, per_class


def score_mcq(rows: Iterable[PredictionRow]) -> dict[str, Any]:
    """The ``mcq_results.json`` document, key for key and number for number as AVLM writes it."""
    overall, per_class = _tally(grade_mcq(rows, lenient=False))
    result = overall.as_result()
    result["per_class"] = {cls: tally.as_result() for cls, tally in per_class.items()}
    return result


def score_mcq_lenient(rows: Iterable[PredictionRow]) -> dict[str, Any]:
    """The lenient document: AVLM's keys, tier counts, per class, and one record per row."""
    graded = grade_mcq(rows, lenient=True)
    overall, per_class = _tally(graded)

    def tiers(items: Iterable[McqRowOutcome]) -> dict[str, int]:
        counts = dict.fromkeys([tier.value for tier in Tier], 0)
        for item in items:
            if item.tier is not None:
                counts[item.tier.value] += 1
        return counts

    result = overall.as_result()
    result["tier_counts"] = tiers(graded)
    result["per_class"] = {
        cls: {**tally.as_result(),
              "tier_counts": tiers(g for g in graded if g.row.question_class == cls)}
        for cls, tally in per_class.items()
    }
    result["rows"] = [
        {"index": g.row.index, "id": g.row.id, "class": g.row.question_class,
         "outcome": g.outcome, "tier": g.tier.value if g.tier else None,
         "gt_letter": g.gt_letter, "pred_letter": g.pred_letter}
        for g in graded
    ]
    return result


@dataclass(frozen=True)
class McqReport:
    """What :func:`score_mcq_dir` wrote."""

    strict: dict[str, Any]
    lenient: dict[str, Any]
    strict_path: Path
    lenient_path: Path


def score_mcq_dir(inference_dir: Path) -> McqReport:
    """Score ``INFERENCE_DIR/predictions.jsonl``; write the strict and the lenient MCQ files."""
    folder = Path(inference_dir)
    rows = read_predictions(folder / AVLM_PREDICTIONS)
    strict = score_mcq(rows)
    with warnings.catch_warnings():
        # The strict pass already warned about every skipped row.
        warnings.simplefilter("ignore", ScoringWarning)
        lenient = score_mcq_lenient(rows)
    strict_path, lenient_path = folder / AVLM_MCQ_RESULTS, folder / AVLM_MCQ_LENIENT_RESULTS
    write_avlm_json(strict_path, strict)
    write_avlm_json(lenient_path, lenient)
    return McqReport(strict, lenient, strict_path, lenient_path)
