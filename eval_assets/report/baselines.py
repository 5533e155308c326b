"""Per family, on the common cases: the frequency and blind baselines beside each model, and the
families where no model beats the better baseline by more than the minimum detectable difference
(definitions in :mod:`eval_assets.metrics.baselines`).

A blind model is one whose run was served by a local model that never sees the image
(:data:`eval_assets.schemas.endpoint.BLIND_LOCAL_MODELS`, recorded in the run's ``config.json``);
:func:`blind_models` reads that. Cases are scored per case: a choice case is 1 when correct, else
0 (parse failures and failed calls included). A family is numeric (``kind`` "mra") when its
per-case scores come from a numeric metric; today every VQA family is a choice family.
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
from eval_assets.schemas.vqa import FAMILY_NAMES
from eval_assets.scoring.numeric import NUMERIC
from eval_assets.scoring.spatial import SPATIAL
from eval_assets.scoring.vqa import report_of

__all__ = ["FamilyBaselines", "ScoredCase", "blind_models", "family_baselines", "spatial_cases",
           "vqa_cases"]


@dataclass(frozen=True)
class ScoredCase:
    """One model's score on one case: its identity, frame (cluster), family, gold answer."""

    key: CaseKey
    frame: Hashable
    family: str
    gold: str
    score: float
    kind: ScoreKind = "accuracy"


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
    found = set()
    for model, run_dir in runs:
        path = Path(run_dir) / RUN_CONFIG
        if path.is_file():
            client = json.loads(path.read_text("utf-8")).get("client") or {}
            if client.get("serve") in BLIND_LOCAL_MODELS and not client.get("base_url"):
                found.add(model)
    return sorted(found)


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


def spatial_cases(results: Sequence[CellScores], coverage: Coverage | None = None
                  ) -> dict[str, list[ScoredCase]]:
    """Each ranked model's spatial cases, for :func:`family_baselines`'s ``extra``: numeric
    cases scored by their MRA (kind "mra", the gold the target), choice cases 1 or 0; only the
    cases every ranked model was scored on, so each family compares models on the same cases.
    A numeric case is its own cluster (it has no single frame); a choice case's is its first
    frame."""
    if coverage is None:
        coverage = build_coverage(results)
    out: dict[str, list[ScoredCase]] = {}
    for r in results:
        if not coverage.usable(r) or r.model not in coverage.ranked_models:
            continue
        cases = out.setdefault(r.model, [])
        numeric, spatial = NUMERIC.result(r), SPATIAL.result(r)
        for n in numeric.rows if numeric is not None else []:
            if n.family in FAMILY_NAMES:
                continue  # dimOS's families are scored as choices (vqa_cases)
            key = (r.recording, r.dataset_sha256, n.case_id)
            cases.append(ScoredCase(key=key, frame=key, family=n.family, gold=f"{n.target:g}",
                                    score=n.mra, kind="mra"))
        for c in spatial.rows if spatial is not None else []:
            cases.append(ScoredCase(
                key=(r.recording, r.dataset_sha256, c.case_id), frame=(r.recording, c.frame_index),
                family=c.family, gold=c.answer, score=1.0 if c.status == "correct" else 0.0))
    common = set.intersection(*({c.key for c in cs} for cs in out.values())) if out else set()
    return {m: sorted((c for c in cs if c.key in common), key=lambda c: c.key)
            for m, cs in out.items()}


def _frequency(cases: Sequence[ScoredCase], kind: ScoreKind) -> tuple[str, list[float]]:
    if kind == "mra":
        median, scores = median_baseline([float(c.gold) for c in cases])
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
                     extra: dict[str, list[ScoredCase]] | None = None) -> list[FamilyBaselines]:
    """Every family's baselines on the common cases of the ranked models (``coverage``,
    default: built from ``results``), families in the report's order; empty without a
    ranking. ``blind`` names the blind models; ``extra`` adds each model's scored cases of
    other (numeric) families, already restricted to the common cases."""
    if coverage is None:
        coverage = build_coverage(results)
    if not coverage.ranked:
        return []
    usable = [r for r in results if coverage.usable(r) and r.model in coverage.ranked_models]
    by_model = vqa_cases(usable, set(coverage.common_cases))
    for model, cases in (extra or {}).items():
        by_model[model] = sorted([*by_model.get(model, []), *cases], key=lambda c: c.key)
    families = sorted({c.family for cs in by_model.values() for c in cs},
                      key=lambda f: (FAMILY_NAMES.index(f) if f in FAMILY_NAMES
                                     else len(FAMILY_NAMES), f))
    blind_here = sorted(set(blind) & set(by_model))
    out = [_family(f, by_model, blind_here) for f in families]
    return [b for b in out if b is not None]
