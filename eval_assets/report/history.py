"""Nightly history: every night's results, kept, and each model's accuracy across nights.

The nightly schedule re-queries every configured model (hosted models drift) and keeps each
night's ``CellScores`` at ``<history>/<YYYY-MM-DD>/<recording>/<model>/results.json``
(``StorageLayout.nightly_results_file``). A score across nights means something only on a fixed
case set, so each (night, model) is scored on three explicit case sets:

- ``night_common``: the cases every model of that night answered (compares models on a night);
- ``model_trend``: the cases this model answered on every night it ran (the same cases each
  night, so a change is the model's, not the questions'); the chart plots this one;
- ``answered``: every case it answered that night (for reference; not comparable).

Cases are (recording, dataset fingerprint, case id), as in the leaderboard: a regenerated
dataset shares no case with the old one.
"""

from __future__ import annotations

import datetime as dt
import glob
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from eval_assets.jsonio import read_model
from eval_assets.metrics.drift import (
    DriftCase,
    NightDrift,
    adjust_by_night,
    adjust_night,
    model_drift,
)
from eval_assets.metrics.stats import clustered_wilson
from eval_assets.metrics.vqa import VqaRowResult, frame_keys
from eval_assets.report.coverage import CaseKey, case_key
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.vqa import report_of

__all__ = [
    "HISTORY_CASE_SETS",
    "NightCaseSet",
    "NightResult",
    "NightScore",
    "load_history",
    "night_cell_drift",
    "night_drift",
    "night_scores",
]

NightCaseSet = Literal["night_common", "model_trend", "answered"]
HISTORY_CASE_SETS: tuple[NightCaseSet, ...] = ("night_common", "model_trend", "answered")
_RESULTS_FILE = "results.json"


class NightResult(BaseModel):
    """One (recording, model) result of one night."""

    model_config = ConfigDict(frozen=True)

    night: str
    result: CellScores


class NightScore(BaseModel):
    """One model's VQA accuracy on one night over one case set (``HISTORY_CASE_SETS``).

    ``accuracy`` and the frame-clustered 95% interval are None when the case set is empty.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    night: str
    model: str
    case_set: NightCaseSet
    n: int
    n_frames: int
    correct: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    night_models: list[str]


def _is_night(name: str) -> bool:
    try:
        return dt.date.fromisoformat(name).isoformat() == name
    except ValueError:
        return False


def load_history(history_dir: Path, *, recording: str | None = None,
                 model: str | None = None) -> list[NightResult]:
    """Every nightly result under ``history_dir``, sorted by night, model, recording.

    ``recording`` / ``model`` restrict it to one recording's / one model's results (only those
    files are read).

    Folders whose name is not a ``YYYY-MM-DD`` date are skipped (a night being written uses a
    temporary name). A missing ``history_dir`` is an empty history. Raises ``ValueError`` naming
    the file when a ``results.json`` is not a valid ``CellScores``, or when one night holds
    two results for the same (recording, model).
    """
    history_dir = Path(history_dir)
    if not history_dir.is_dir():
        return []
    out: list[NightResult] = []
    for night_dir in sorted(p for p in history_dir.iterdir() if p.is_dir()
                            and _is_night(p.name)):
        seen: dict[tuple[str, str], Path] = {}
        # Names are escaped: a recording called "a[1]" is that folder, not a pattern.
        pattern = (f"{glob.escape(recording) if recording else '*'}/"
                   f"{glob.escape(model) if model else '*'}/{_RESULTS_FILE}")
        for path in sorted(night_dir.glob(pattern)):
            result = read_model(path, CellScores)
            key = (result.recording, result.model)
            if key in seen:
                raise ValueError(f"{path} and {seen[key]} are both recording {key[0]!r}, "
                                 f"model {key[1]!r} of night {night_dir.name}")
            seen[key] = path
            out.append(NightResult(night=night_dir.name, result=result))
    return sorted(out, key=lambda n: (n.night, n.result.model, n.result.recording))


def _score(night: str, model: str, case_set: NightCaseSet, rows: Sequence[VqaRowResult],
           night_models: list[str]) -> NightScore:
    interval = clustered_wilson(frame_keys(rows), [r.status == "correct" for r in rows])
    correct = sum(1 for r in rows if r.status == "correct")
    return NightScore(
        night=night, model=model, case_set=case_set, n=len(rows),
        n_frames=interval.n_clusters if interval else 0, correct=correct,
        accuracy=correct / len(rows) if rows else None,
        ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
        night_models=night_models)


def _one_result_per_cell_and_night(history: Sequence[NightResult]) -> None:
    """Raise ``ValueError`` when a night has two results for one (recording, model)."""
    seen: set[tuple[str, str, str]] = set()
    for item in history:
        r = item.result
        if (item.night, r.recording, r.model) in seen:
            raise ValueError(f"night {item.night} has two results for recording "
                             f"{r.recording!r} and model {r.model!r}")
        seen.add((item.night, r.recording, r.model))


def night_scores(history: Sequence[NightResult]) -> list[NightScore]:
    """Each model's accuracy per night on each case set, sorted by model, night, case set.

    See the module docstring for the case sets. Raises ``ValueError`` when a night has two
    results for one (recording, model).
    """
    rows: dict[tuple[str, str], dict[CaseKey, VqaRowResult]] = {}
    _one_result_per_cell_and_night(history)
    for item in history:
        r = item.result
        rows.setdefault((item.night, r.model), {}).update(
            (case_key(r, x), x) for x in report_of(r).rows)
    nights = sorted({night for night, _ in rows})
    models_of = {night: sorted(m for n, m in rows if n == night) for night in nights}
    night_common: dict[str, set[CaseKey]] = {
        night: set.intersection(*(set(rows[(night, m)]) for m in models_of[night]))
        for night in nights}
    out = []
    for model in sorted({m for _, m in rows}):
        ran = [night for night in nights if (night, model) in rows]
        trend = set.intersection(*(set(rows[(night, model)]) for night in ran))
        for night in ran:
            mine = rows[(night, model)]
            sets: tuple[tuple[NightCaseSet, set[CaseKey]], ...] = (
                ("night_common", night_common[night]), ("model_trend", trend),
                ("answered", set(mine)))
            for case_set, keys in sets:
                out.append(_score(night, model, case_set, [mine[k] for k in sorted(keys)],
                                  models_of[night]))
    return out


def night_drift(history: Sequence[NightResult], *, latest: int | None = None,
                adjust: bool = True) -> list[NightDrift]:
    """Each model's every night against its previous night, overall and per family (paired on
    the cases both nights answered, pooled over recordings; :mod:`eval_assets.metrics.drift`).
    ``latest``: only each model's last ``latest`` comparisons (None: all). ``adjust``: the
    p-values of each night's comparisons (every model and family) are Benjamini-Hochberg
    adjusted together and flag on the adjusted p (:func:`adjust_by_night`); False leaves them
    raw.

    Sorted by model, night, family. Raises ``ValueError`` when a night has two results for one
    (recording, model).
    """
    nights: dict[str, dict[str, dict[CaseKey, DriftCase]]] = {}
    _one_result_per_cell_and_night(history)
    for item in history:
        r = item.result
        cases = nights.setdefault(r.model, {}).setdefault(item.night, {})
        cases.update((case_key(r, x), DriftCase((x.recording, x.frame_index), x.family,
                                                x.status == "correct"))
                     for x in report_of(r).rows)
    drift = [d for model in sorted(nights)
             for d in model_drift(model, nights[model], latest=latest)]
    return adjust_by_night(drift) if adjust else drift


def night_cell_drift(history: Sequence[NightResult], night: str
                     ) -> list[tuple[str, NightDrift]]:
    """Every (recording, model) cell that ran ``night`` against its previous night, overall and
    per family, Benjamini-Hochberg adjusted over the night (:func:`adjust_night`: the family
    comparisons of every recording and model as one set, the overall ones as another): the
    nightly drift check's tests.

    Each item is (recording, comparison); sorted by recording, model, family. Kept nights after
    ``night`` are ignored (a backfill of an old night is judged as of that night).
    """
    cells: list[tuple[str, NightDrift]] = []
    upto = [h for h in history if h.night <= night]
    for recording in sorted({h.result.recording for h in upto}):
        mine = [h for h in upto if h.result.recording == recording]
        cells += [(recording, d) for d in night_drift(mine, latest=1, adjust=False)
                  if d.night_after == night]
    adjusted = adjust_night([d for _, d in cells])
    return [(recording, d) for (recording, _), d in zip(cells, adjusted, strict=True)]
