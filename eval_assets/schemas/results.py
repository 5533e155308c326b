"""Per-(recording, model) scores: what the ``benchmark_results`` asset writes and the leaderboard
and the report read (``results.json``).

One :class:`CellScores` per (recording, model) cell: its identity, how the model-under-test calls
went, and ``scores`` keyed by metric name, in the shape of inspect_ai's ``EvalScore.metrics``:
each value is that metric's result document, or a :class:`NotMeasured` record with its reason.
This module knows no metric: each metric's spec (:mod:`eval_assets.scoring`) owns its result
model and parses its entry with :meth:`CellScores.outcome`.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

R = TypeVar("R", bound=BaseModel)


class PredictionCounts(BaseModel):
    """How the model-under-test calls went: failures are never filled with answers."""

    model_config = ConfigDict(frozen=True)

    cases: int
    succeeded: int
    failed: int
    parse_failures: int
    descriptions: int
    descriptions_failed: int


class ScoredInputs(BaseModel):
    """The content a metric's file or a cell's results were computed from, as hashes
    (:mod:`eval_assets.scoring.provenance`)."""

    model_config = ConfigDict(frozen=True)

    dataset_sha256: str = Field(description="the dataset: cases, labels, audit labels, images")
    predictions_sha256: str = Field(
        description="the run's standing records (answers, descriptions, rotations, flips)")
    overrides_sha256: str | None = Field(
        default=None, description="the recording's label overrides file; None: no such file, or "
        "a metric that does not read gold answers")


class NotMeasured(BaseModel):
    """A metric that was not measured on a cell, and why; never a filled-in number."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str


def parse_outcome(document: Any, model: type[R]) -> R | NotMeasured:
    """A metric's stored document as its result model, or the not-measured record it is."""
    if isinstance(document, dict) and set(document) == {"reason"}:
        return NotMeasured.model_validate(document)
    return model.model_validate(document)


class CellScores(BaseModel):
    """Everything measured for one model on one recording; one ``results.json`` per cell."""

    model_config = ConfigDict(frozen=True)

    recording: str
    model: str
    dataset_sha256: str
    predictions: PredictionCounts
    scores: dict[str, dict[str, Any]]
    inputs: ScoredInputs | None = Field(
        default=None, description="what every score was computed from; the leaderboard and "
        "report leave the cell out as stale when it differs from the inputs as they are now "
        "(None: results written before it was recorded, also left out)")
    served_models: dict[str, int] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the model each of the run's replies named, counted "
        "(eval_assets.served_model); None: no reply named one (or results older than it)")
    served_mismatch: bool | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="true: some replies came from another model than the declared one (the "
        "match rule of eval_assets.served_model): the cell's answers are not all its model's")
    # Parsed entries of ``scores`` by metric name: a report reads each many times.
    _parsed: dict[str, BaseModel] = PrivateAttr(default_factory=dict)

    def outcome(self, name: str, model: type[R]) -> R | NotMeasured:
        """The metric ``name``'s result as ``model``, or its not-measured record (also when the
        cell has no entry for it: a cell scored before the metric existed)."""
        cached = self._parsed.get(name)
        if cached is None:
            document = self.scores.get(name)
            cached = (NotMeasured(reason="not scored for this cell") if document is None
                      else parse_outcome(document, model))
            self._parsed[name] = cached
        return cast("R | NotMeasured", cached)

    def result(self, name: str, model: type[R]) -> R | None:
        """The metric's result, or None when it was not measured."""
        outcome = self.outcome(name, model)
        return None if isinstance(outcome, NotMeasured) else outcome
