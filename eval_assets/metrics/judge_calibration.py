"""The judge's calibration gate: a judge must show it can tell a right description from a wrong one.

Before any row is judged, the judge scores a few pairs built from the rows it is about to judge:
each pair is a frame's reference answer (the human description) and a corrupted copy of it, both
judged against that same reference and the frame's private evidence (the row's metadata). The
corruptions are the errors a vision-language model makes: a wrong colour, a wrong count, an
invented object, left and right swapped. A pair *agrees* when the reference scores strictly
higher than its corruption; a judge that gives everything 10 (a text-only model that cannot
read the rubric) agrees on none. Below ``min_agreement`` the judge's scores are withheld.

Cost is kept to seconds: at most ``max_pairs`` pairs over at most ``max_frames`` frames (one
reference call per frame, one call per corruption), score-only replies, and the loop stops as soon
as the threshold can no longer be reached. The set is deterministic: frames are ordered by a seeded
hash of their content, and every corruption choice is drawn from a generator seeded the same way.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from eval_assets import progress
from eval_assets.hashing import text_sha256
from eval_assets.metrics.avlm_rows import PredictionRow
from eval_assets.metrics.judge_reply import JudgeOutcome

CorruptionKind = Literal["wrong_colour", "wrong_count", "invented_object", "swapped_left_right"]
CORRUPTION_KINDS: tuple[CorruptionKind, ...] = (
    "wrong_colour", "wrong_count", "invented_object", "swapped_left_right")

CalibrationStatus = Literal["passed", "failed", "disabled", "skipped"]

COLOURS = ("red", "green", "blue", "yellow", "orange", "purple", "pink", "white", "black",
           "brown", "grey", "gray")
# Colours a corruption may introduce: ones that are rarely ambiguous shades of another.
_NEW_COLOURS = ("pink", "white", "black", "brown", "purple", "orange", "yellow", "green", "blue",
                "red")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_NUMBER_WORDS = {n: w for w, n in _NUMBERS.items() if w not in ("a", "an")}
# Nouns a count can apply to: the scene vocabulary, common MSCOCO things, and people.
_COUNT_NOUNS = ("box", "ball", "cylinder", "cube", "cone", "person", "people", "man", "woman",
                "chair", "table", "door", "window", "car", "cup", "bottle", "book", "dog", "cat",
                "object", "robot", "wall", "shelf", "plant")
_IRREGULAR_PLURALS = {"person": "people", "man": "men", "woman": "women", "shelf": "shelves"}
_INVENTED = ("dog", "bicycle", "laptop", "potted plant", "cat", "backpack", "bottle",
             "teddy bear", "clock", "skateboard")
_WORD = re.compile(r"[a-z]+")


class CalibrationPair(BaseModel):
    """One (reference, corruption) pair and how the judge scored each text."""

    model_config = ConfigDict(frozen=True)

    id: str
    row_id: str | int | None
    kind: CorruptionKind
    reference: str
    corrupted: str
    reference_score: int | None
    corrupted_score: int | None
    reference_error: str | None = None
    corrupted_error: str | None = None
    agreed: bool


class CalibrationReport(BaseModel):
    """The calibration outcome written into ``llm_judge_results.json`` (key ``calibration``).

    ``agreement`` is ``agreed / evaluated``; the gate passes when ``agreed / planned`` reaches
    ``min_agreement``, so stopping early (``stopped_early``) can only happen on a failure.
    """

    model_config = ConfigDict(frozen=True)

    status: CalibrationStatus
    min_agreement: float
    agreement: float | None = None
    agreed: int = 0
    evaluated: int = 0
    planned: int = 0
    stopped_early: bool = False
    reason: str | None = None
    pairs: list[CalibrationPair] = []

    @property
    def withheld(self) -> bool:
        """True when the judge failed: its scores must not be reported."""
        return self.status == "failed"


@dataclass(frozen=True)
class CalibrationItem:
    """A pair to judge: the frame's row with the reference, and the corrupted prediction."""

    pair_id: str
    frame: int  # position of the frame in the calibration set (groups the reference calls)
    row: PredictionRow
    kind: CorruptionKind
    corrupted: str

    @property
    def reference(self) -> str:
        """The reference answer (the row's ground truth)."""
        return self.row.ground_truth or ""

    def reference_row(self) -> PredictionRow:
        """The row that asks the judge to score the reference against itself."""
        return _as_prediction(self.row, self.reference)

    def corrupted_row(self) -> PredictionRow:
        """The row that asks the judge to score the corruption against the reference."""
        return _as_prediction(self.row, self.corrupted)


def _as_prediction(row: PredictionRow, text: str) -> PredictionRow:
    return row.model_copy(update={"prediction": text, "inference_status": "success"})


def _rng(seed: int, *parts: Any) -> random.Random:
    # Plain json.dumps (spaces, insertion order, str() of anything else), not the canonical
    # JSON: the corruptions drawn, hence stored calibration requests, follow from this recipe.
    digest = text_sha256(json.dumps([seed, *parts], default=str))
    return random.Random(int(digest[:16], 16))


def _match_case(original: str, replacement: str) -> str:
    return replacement[:1].upper() + replacement[1:] if original[:1].isupper() else replacement


def _evidence_words(metadata: Any) -> set[str]:
    """Every lower-case word in the row's evidence, so a corruption never lands on the truth."""
    text = json.dumps(metadata, ensure_ascii=False, default=str) if metadata is not None else ""
    return set(_WORD.findall(text.lower()))


def wrong_colour(reference: str, avoid: set[str], rng: random.Random) -> str | None:
    """One colour word replaced by a colour that neither the reference nor the evidence uses."""
    pattern = re.compile(r"\b(" + "|".join(COLOURS) + r")\b", re.IGNORECASE)
    found = list(pattern.finditer(reference))
    if not found:
        return None
    used = {m.group(1).lower() for m in found} | avoid
    fresh = [c for c in _NEW_COLOURS if c not in used]
    if not fresh:
        return None
    target = rng.choice(found)
    colour = _match_case(target.group(1), rng.choice(fresh))
    return reference[:target.start()] + colour + reference[target.end():]


def _plural(noun: str) -> str:
    if noun in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[noun]
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def wrong_count(reference: str, rng: random.Random) -> str | None:
    """One counted object ("a red ball", "two people") given another count."""
    pattern = re.compile(
        r"\b(" + "|".join(_NUMBERS) + r")\s+((?:[a-z]+[ -]){0,3}?)(" + "|".join(_COUNT_NOUNS)
        + r")(s|es)?\b", re.IGNORECASE)
    found = list(pattern.finditer(reference))
    if not found:
        return None
    target = rng.choice(found)
    word, adjectives, noun, suffix = target.groups()
    count = _NUMBERS[word.lower()]
    if count == 1:
        new_count, phrase = 3, _plural(noun.lower()) if not suffix else noun + suffix
    else:
        new_count, phrase = count + 2, noun + (suffix or "")
    number = _match_case(word, _NUMBER_WORDS.get(new_count, str(new_count)))
    return (reference[:target.start()] + f"{number} {adjectives}{phrase}"
            + reference[target.end():])


def invented_object(reference: str, avoid: set[str], rng: random.Random) -> str | None:
    """The reference plus one sentence about an object that is neither described nor detected."""
    words = set(_WORD.findall(reference.lower())) | avoid
    fresh = [o for o in _INVENTED if not set(o.split()) & words]
    if not fresh:
        return None
    thing = rng.choice(fresh)
    article = "An" if thing[0] in "aeiou" else "A"
    return f"{reference.rstrip()} {article} {thing} is also in the frame."


def swapped_left_right(reference: str) -> str | None:
    """Every "left" made "right" and every "right" made "left"."""
    pattern = re.compile(r"\b(left|right)\b", re.IGNORECASE)
    if not pattern.search(reference):
        return None

    def swap(match: re.Match[str]) -> str:
        other = "right" if match.group(1).lower() == "left" else "left"
        return _match_case(match.group(1), other)

    return pattern.sub(swap, reference)


def corrupt(reference: str, kind: CorruptionKind, metadata: Any,
            rng: random.Random) -> str | None:
    """``reference`` with one error of ``kind``; None when the text offers no place for it."""
    avoid = _evidence_words(metadata)
    if kind == "wrong_colour":
        text = wrong_colour(reference, avoid, rng)
    elif kind == "wrong_count":
        text = wrong_count(reference, rng)
    elif kind == "invented_object":
        text = invented_object(reference, avoid, rng)
    else:
        text = swapped_left_right(reference)
    return text if text is not None and text != reference else None


def build_calibration_set(rows: Sequence[PredictionRow], *, max_pairs: int, max_frames: int,
                          seed: int = 0) -> list[CalibrationItem]:
    """Up to ``max_pairs`` pairs from up to ``max_frames`` rows that have a reference answer.

    Rows are ordered by a seeded hash of their id and reference, so the same rows give the same
    set whatever their order. Each frame tries the corruption kinds in a rotated order (frame 0
    starts with a wrong colour, frame 1 with a wrong count, ...) and the pairs are taken round by
    round, so the kinds spread over the frames. Pairs come out grouped by frame, which lets one
    reference call serve all pairs of a frame.
    """
    if max_pairs <= 0 or max_frames <= 0:
        return []
    seen: set[str] = set()
    frames: list[tuple[str, PredictionRow]] = []
    for row in rows:
        reference = (row.ground_truth or "").strip()
        if not reference or reference in seen:
            continue
        seen.add(reference)
        order = text_sha256(f"{seed}:{row.id}:{reference}")
        frames.append((order, row))
    frames.sort(key=lambda item: item[0])
    per_frame: list[list[tuple[CorruptionKind, str]]] = []
    for position, (_, row) in enumerate(frames[:max_frames]):
        kinds = CORRUPTION_KINDS[position % 4:] + CORRUPTION_KINDS[:position % 4]
        options = []
        for kind in kinds:
            text = corrupt(row.ground_truth or "", kind, row.metadata,
                           _rng(seed, row.id, row.ground_truth, kind))
            if text is not None:
                options.append((kind, text))
        per_frame.append(options)
    chosen: list[tuple[int, int]] = []
    for round_ in range(len(CORRUPTION_KINDS)):
        for frame, options in enumerate(per_frame):
            if round_ < len(options) and len(chosen) < max_pairs:
                chosen.append((frame, round_))
    items = []
    for frame, round_ in sorted(chosen):
        row = frames[frame][1]
        kind, text = per_frame[frame][round_]
        items.append(CalibrationItem(pair_id=f"{row.id}:{kind}", frame=frame, row=row,
                                     kind=kind, corrupted=text))
    return items


def calibrate(rows: Sequence[PredictionRow], score: Callable[[PredictionRow], JudgeOutcome], *,
              max_pairs: int, max_frames: int, min_agreement: float,
              seed: int = 0) -> CalibrationReport:
    """Score the calibration pairs with ``score`` and decide whether the judge may judge.

    ``score`` judges one row (its prediction against its ground truth) and reports trouble as a
    failure outcome; a pair whose texts are not both scored does not agree. When the reference of
    a frame gets no score, that frame's corruptions are not sent: they cannot agree.
    """
    if max_pairs <= 0:
        return CalibrationReport(status="disabled", min_agreement=min_agreement,
                                 reason="calibration_pairs is 0")
    items = build_calibration_set(rows, max_pairs=max_pairs, max_frames=max_frames, seed=seed)
    if not items:
        return CalibrationReport(status="skipped", min_agreement=min_agreement,
                                 reason="no row has a reference answer to corrupt")
    planned = len(items)
    need = math.ceil(min_agreement * planned - 1e-9)
    references: dict[int, JudgeOutcome] = {}
    pairs: list[CalibrationPair] = []
    agreed = 0
    with progress.task("judge calibration", total=planned) as advance:
        for item in items:
            reference = references.get(item.frame)
            if reference is None:
                reference = references[item.frame] = score(item.reference_row())
            corrupted = score(item.corrupted_row()) if reference.ok else None
            ok = (reference.ok and corrupted is not None and corrupted.ok
                  and (reference.score or 0) > (corrupted.score or 0))
            agreed += ok
            pairs.append(CalibrationPair(
                id=item.pair_id, row_id=item.row.id, kind=item.kind, reference=item.reference,
                corrupted=item.corrupted, reference_score=reference.score,
                corrupted_score=None if corrupted is None else corrupted.score,
                reference_error=reference.error_category,
                corrupted_error=(None if corrupted is None else corrupted.error_category)
                if reference.ok else "not_asked", agreed=ok))
            advance(1)
            if agreed + planned - len(pairs) < need:
                break  # the threshold is out of reach: every further call would be wasted
    evaluated = len(pairs)
    return CalibrationReport(
        status="passed" if agreed >= need else "failed", min_agreement=min_agreement,
        agreement=agreed / evaluated, agreed=agreed, evaluated=evaluated, planned=planned,
        stopped_early=evaluated < planned, pairs=pairs)
