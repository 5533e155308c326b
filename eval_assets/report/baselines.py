"""Per family, on the common cases: the frequency and blind baselines beside each model, and the
families where no model beats the better baseline by more than the minimum detectable difference
(definitions in :mod:`eval_assets.metrics.baselines`).

A blind model is one whose run was served by a local model that never sees the image
(:data:`eval_assets.schemas.endpoint.BLIND_LOCAL_MODELS`, recorded in the run's ``config.json``);
:func:`blind_models` reads that. Cases are scored per case: a choice case is 1 when correct, else
0 (parse failures and failed calls included). A family is numeric (``kind`` "mra") when its
per-case scores come from the numeric metric (each case's mean relative accuracy; a failed
call or no number scores 0, as the metric counts it).

The spatial families (``spatial_cases.jsonl``) join on the spatial cases every ranked model
answered (their own common set: the ranking's common cases are dimOS's). Their cases are
clustered by the case's first frame for choice families; numeric cases are one cluster each
(the numeric metric's rows do not carry a frame), so their minimum detectable difference has
no frame design effect.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.layout import RUN_CONFIG
from eval_assets.metrics.baselines import (
    BaselineComparison,
    compare_to_baseline,
    frequency_scores,
    median_baseline,
)
from eval_assets.metrics.headline import ScoreKind
from eval_assets.report.coverage import CaseKey, Coverage, build_coverage, case_key
from eval_assets.schemas.endpoint import BLIND_LOCAL_MODELS
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.numeric import NUMERIC, case_score
from eval_assets.scoring.spatial import SPATIAL
from eval_assets.scoring.vqa import report_of
from eval_assets.vqa.declarations import family_names

__all__ = ["RANDOM_LOCAL_MODEL", "FamilyBaselines", "ScoredCase", "baseline_models", "blind_models",
           "family_baselines", "spatial_cases", "vqa_cases"]

# The local model that guesses uniformly among the choices (eval_assets.local_models.registry).
RANDOM_LOCAL_MODEL = "random"


@dataclass(frozen=True)
class ScoredCase:
    """One model's score on one case: its identity, frame (cluster), family, gold answer."""

    key: CaseKey
    frame: Hashable
    family: str
    gold: str
    score: float
    kind: ScoreKind = "accuracy"
    unit: str | None = None  # a numeric case's parser unit: with the family, its scoring rule


class FamilyBaselines(BaseModel):
    """One family's baselines and every (non-blind) model against the better of them."""

    model_config = ConfigDict(frozen=True)

    family: str
    kind: ScoreKind
    n: int
    frequency_answer: str = Field(description="most common gold answer (median for numbers)")
    frequency: float
    blind_model: str | None
    blind: float | None
    better: Literal["frequency", "blind"]
    models: dict[str, BaselineComparison]
    flagged: bool = Field(description="no model beats the better baseline by more than the MDD")


def blind_models(runs: Iterable[tuple[str, Path]]) -> list[str]:
    """The models (of ``(model, run folder)`` pairs) whose run a blind local model served."""
    return sorted(m for m, kind in baseline_models(runs).items() if kind == "blind")


def baseline_models(runs: Iterable[tuple[str, Path]]) -> dict[str, str]:
    """The models (of ``(model, run folder)`` pairs) that are blind baselines, by kind:
    "random" when the local random guesser served their run, "blind" when a blind local model
    did (:data:`~eval_assets.schemas.endpoint.BLIND_LOCAL_MODELS`), read from the run's
    ``config.json``; a run with a ``base_url`` is a model under test whatever it is called."""
    found: dict[str, str] = {}
    for model, run_dir in runs:
        path = Path(run_dir) / RUN_CONFIG
        if path.is_file():
            client = json.loads(path.read_text("utf-8")).get("client") or {}
            if client.get("base_url"):
                continue
            if client.get("serve") == RANDOM_LOCAL_MODEL:
                found[model] = "random"
            elif client.get("serve") in BLIND_LOCAL_MODELS:
                found[model] = "blind"
    return dict(sorted(found.items()))


def vqa_cases(results: Sequence[CellScores], common: Collection[CaseKey]
              ) -> dict[str, list[ScoredCase]]:
    """Each model's scored choice cases in ``common``, in case-key order."""
    out: dict[str, list[ScoredCase]] = {}
    for r in results:
        for row in report_of(r).rows:
            key = case_key(r, row)
            if key in common:
                out.setdefault(r.model, []).append(ScoredCase(
                    key=key, frame=(r.recording, row.frame_index), family=row.family,
                    gold=row.answer, score=1.0 if row.status == "correct" else 0.0))
    return {m: sorted(cases, key=lambda c: c.key) for m, cases in out.items()}


def spatial_cases(results: Sequence[CellScores]) -> dict[str, list[ScoredCase]]:
    """Each model's scored spatial cases (numeric ones by MRA, choice ones 1/0) among those that
    every model of ``results`` answered, in case-key order."""
    out: dict[str, list[ScoredCase]] = {}
    for r in results:
        cases = out.setdefault(r.model, [])
        numeric = NUMERIC.result(r)
        for row in numeric.rows if numeric is not None else ():
            key = (r.recording, r.dataset_sha256, row.case_id)
            cases.append(ScoredCase(key=key, frame=key, family=row.family,
                                    gold=f"{row.target!r}", score=row.mra, kind="mra",
                                    unit=row.unit))
        choice = SPATIAL.result(r)
        for vqa_row in choice.rows if choice is not None else ():
            cases.append(ScoredCase(
                key=(r.recording, r.dataset_sha256, vqa_row.case_id),
                frame=(r.recording, vqa_row.frame_index), family=vqa_row.family,
                gold=vqa_row.answer, score=1.0 if vqa_row.status == "correct" else 0.0))
    if not out:
        return {}
    common = set.intersection(*({c.key for c in cs} for cs in out.values()))
    return {m: sorted((c for c in cs if c.key in common), key=lambda c: c.key)
            for m, cs in out.items()}


def _frequency(cases: Sequence[ScoredCase], kind: ScoreKind) -> tuple[str, list[float]]:
    if kind == "mra":
        # The median scored as the family's answers are (angles by angular accuracy, motion
        # distances with the zero rule): plain MRA would divide by a truth of 0.
        family, unit = cases[0].family, cases[0].unit
        median, scores = median_baseline(
            [float(c.gold) for c in cases],
            score=lambda pred, truth: case_score(pred, truth, family, unit))
        return f"{median:g}", scores
    return frequency_scores([c.gold for c in cases])


def _family(family: str, by_model: dict[str, list[ScoredCase]], blind: Sequence[str]
            ) -> FamilyBaselines | None:
    cases = {m: [c for c in cs if c.family == family] for m, cs in by_model.items()}
    reference = next((cs for cs in cases.values() if cs), None)
    if reference is None:
        return None
    kind = reference[0].kind
    for model, cs in cases.items():
        if cs and [c.key for c in cs] != [c.key for c in reference]:
            raise ValueError(f"family {family!r}: model {model!r} has other cases than the "
                             "others; baselines compare models on the same (common) cases")
    keys = [c.frame for c in reference]
    answer, freq = _frequency(reference, kind)
    blind_scores = {m: [c.score for c in cases[m]] for m in blind if cases.get(m)}
    best_blind = min(blind_scores, key=lambda m: (-sum(blind_scores[m]), m), default=None)
    frequency = sum(freq) / len(freq)
    blind_mean = (sum(blind_scores[best_blind]) / len(reference)
                  if best_blind is not None else None)
    use_blind = blind_mean is not None and blind_mean > frequency
    baseline = blind_scores[best_blind] if use_blind and best_blind is not None else freq
    models = {m: compare_to_baseline(keys, [c.score for c in cs], baseline)
              for m, cs in sorted(cases.items()) if m not in blind and cs}
    return FamilyBaselines(
        family=family, kind=kind, n=len(reference), frequency_answer=answer,
        frequency=frequency, blind_model=best_blind, blind=blind_mean,
        better="blind" if use_blind else "frequency", models=models,
        flagged=not any(c.beats for c in models.values()))


def family_baselines(results: Sequence[CellScores], *, coverage: Coverage | None = None,
                     blind: Collection[str] = (),
                     ) -> list[FamilyBaselines]:
    """Every family's baselines on the common cases of the ranked models (``coverage``,
    default: built from ``results``), dimOS's families in the report's order, then the spatial
    families (:func:`spatial_cases`); empty without a ranking. ``blind`` names the blind
    models."""
    if coverage is None:
        coverage = build_coverage(results)
    if not coverage.ranked:
        return []
    usable = [r for r in results if coverage.usable(r) and r.model in coverage.ranked_models]
    by_model = vqa_cases(usable, set(coverage.common_cases))
    for model, cases in spatial_cases(usable).items():
        by_model[model] = sorted([*by_model.get(model, []), *cases], key=lambda c: c.key)
    order = family_names()  # declaration order: dimOS's families, then the spatial ones
    families = sorted({c.family for cs in by_model.values() for c in cs},
                      key=lambda f: (order.index(f) if f in order else len(order), f))
    blind_here = sorted(set(blind) & set(by_model))
    out = [_family(f, by_model, blind_here) for f in families]
    return [b for b in out if b is not None]
