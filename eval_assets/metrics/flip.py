"""FlipEval: a left/right case asked about its image and about the image mirrored.

Mirroring the image swaps left and right, so the mirrored case's gold answer is the original's
with "left" and "right" swapped (``flip_text``). A model that reads the image answers both
correctly; one that answers from the question's wording or a preferred side cannot.

Definitions (per model, overall and per family; a row is a left/right case):

- **Included cases**: both the original and the mirrored case have a record (a failed call or an
  unparseable reply counts, as a wrong answer). A case whose mirror was never asked is excluded
  and counted (``not_asked``).
- **Consistency** (FlipEval accuracy) = cases answered correctly both ways / n, with the
  frame-clustered Wilson interval (:func:`eval_assets.metrics.stats.clustered_wilson`).
- **Original / mirrored accuracy**: each side alone on the same cases.
- **Agreement**: among the cases where both replies named a choice, the share whose mirrored
  choice is the mirror of the original choice (right or wrong): a model that flips its answer
  with the image, whatever its accuracy.

Empty denominators are None ("n/a"), never 0. The rows and figures are the paired controls'
(:mod:`eval_assets.metrics.paired`), stored under FlipEval's names (the variant is ``mirrored``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import SerializerFunctionWrapHandler, model_serializer, model_validator

from eval_assets.choices import flip_text, is_left_right
from eval_assets.metrics.paired import PairedReport, PairedRow, paired_report
from eval_assets.metrics.vqa import GoldCase, RowStatus, match_choice

__all__ = ["FlipCase", "FlipReport", "flip_eval", "flip_text", "is_left_right", "score_flip_case"]

class FlipCase(GoldCase):
    """A left/right case with the reply to it and to its mirror (None: failed call; absent
    ``mirrored_asked``: the mirror was never asked)."""

    reply: str | None
    mirrored_reply: str | None = None
    mirrored_asked: bool


# FlipEval's own names for the paired figures (the variant is the mirror): its stored results
# (flip.json, every results.json) were written under them before the three paired controls
# shared one type, and keep them; ``changed`` (1 - agreement) was never part of them.
_STORED_NAMES = {"variant": "mirrored", "variant_accuracy": "mirrored_accuracy",
                 "n_compared": "n_agreement"}
_PAIRED_NAMES = {stored: paired for paired, stored in _STORED_NAMES.items()}


def _renamed(document: Any, names: Mapping[str, str]) -> Any:
    """A row or stats document under other names; a built model is left as it is."""
    if not isinstance(document, dict):
        return document
    return {names.get(key, key): value for key, value in document.items() if key != "changed"}


def _stats_read(document: Any) -> Any:
    renamed = _renamed(document, _PAIRED_NAMES)
    if isinstance(renamed, dict) and "changed" not in renamed:
        agreement = renamed.get("agreement")
        renamed["changed"] = None if agreement is None else 1.0 - agreement
    return renamed


class FlipReport(PairedReport):
    """FlipEval overall and per family (sorted by name), with every case's row; stored under
    FlipEval's names (``mirrored``, ``mirrored_accuracy``, ``n_agreement``; no ``changed``)."""

    @model_validator(mode="before")
    @classmethod
    def _from_stored_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # Only what is there is renamed: a missing or malformed part fails validation as before.
        read = dict(data)
        if "overall" in read:
            read["overall"] = _stats_read(read["overall"])
        if isinstance(read.get("by_family"), dict):
            read["by_family"] = {f: _stats_read(s) for f, s in read["by_family"].items()}
        if isinstance(read.get("rows"), list):
            read["rows"] = [_renamed(r, _PAIRED_NAMES) for r in read["rows"]]
        return read

    @model_serializer(mode="wrap")
    def _to_stored_names(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        document = handler(self)
        return {"overall": _renamed(document["overall"], _STORED_NAMES),
                "by_family": {f: _renamed(s, _STORED_NAMES)
                              for f, s in document["by_family"].items()},
                "rows": [_renamed(r, _STORED_NAMES) for r in document["rows"]]}


def _status(reply: str | None, choices: list[str], gold: str) -> tuple[RowStatus, str | None]:
    if reply is None:
        return "failed_call", None
    chosen = match_choice(reply, choices).choice
    if chosen is None:
        return "parse_failure", None
    return ("correct" if chosen == gold else "incorrect"), chosen


def score_flip_case(case: FlipCase) -> PairedRow:
    """Score the original reply against the gold answer and the mirrored one against its
    mirror (the choices are shown in the same order both ways)."""
    original, chosen = _status(case.reply, case.choices, case.answer)
    mirrored: RowStatus | None = None
    agree = None
    if case.mirrored_asked:
        mirrored, mirrored_chosen = _status(case.mirrored_reply, case.choices,
                                            flip_text(case.answer))
        if chosen is not None and mirrored_chosen is not None:
            agree = mirrored_chosen == flip_text(chosen)
    return PairedRow(case_id=case.case_id, family=case.family, recording=case.recording,
                     frame_index=case.frame_index, original=original, variant=mirrored,
                     agree=agree)


def flip_eval(cases: Iterable[FlipCase]) -> FlipReport:
    """Score every case both ways; overall and per family (sorted by name)."""
    return paired_report([score_flip_case(c) for c in cases], FlipReport)
