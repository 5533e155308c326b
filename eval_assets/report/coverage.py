"""Which (recording, model) cells the leaderboard may use, and the case set every ranking uses.

A report built while the pipeline is still running, or after a dataset was regenerated, holds
results over different cases: one model has answered 1,496 cases, another 749; one model's
results are for last week's dataset. Pooling each model over what it happened to answer ranks
them on different questions. So models are ranked only on the **common case set**: the cases
every ranked model has a scored row for, keyed by (recording, dataset fingerprint, case id): two
results for one recording on different datasets share no case, however their ids look.

Each expected cell (recording x model) is ``ok``, ``missing`` (no result) or ``stale`` (its
``dataset_sha256`` is not the recording's current dataset fingerprint, or the caller marked it).
Missing and stale cells never enter any number; they are listed so a reader sees what is absent.
A model with no ``ok`` cell is not ranked (it has nothing to be ranked on); every other model is,
and if no case is common to all of them there is no ranking at all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.vqa import VqaRowResult
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.vqa import report_of

__all__ = [
    "CaseKey",
    "CellStatus",
    "Coverage",
    "CoverageCell",
    "build_coverage",
    "case_key",
    "check_results",
    "short_sha",
]

CellStatus = Literal["ok", "missing", "stale"]
# (recording, dataset_sha256, case_id): a case id is only unique within one dataset version.
CaseKey = tuple[str, str, str]
_SHA_CHARS = 12  # enough to tell dataset versions apart in prose


def case_key(result: CellScores, row: VqaRowResult) -> CaseKey:
    """The identity of one scored case across models: (recording, dataset, case id)."""
    return (result.recording, result.dataset_sha256, row.case_id)


def short_sha(sha: str | None) -> str:
    """A dataset fingerprint shortened for prose (``0123456789ab…``)."""
    if not sha:
        return "unknown"
    return sha[:_SHA_CHARS] + ("\u2026" if len(sha) > _SHA_CHARS else "")


def check_results(results: Sequence[CellScores], reserved: str | None = None) -> None:
    """Raise ``ValueError`` when two results share a (recording, model) pair, or a recording is
    named ``reserved`` (the leaderboard's pooled-row label)."""
    seen: dict[tuple[str, str], int] = {}
    for i, r in enumerate(results):
        key = (r.recording, r.model)
        if key in seen:
            raise ValueError(
                f"results #{seen[key]} and #{i} are both for recording {r.recording!r} and model "
                f"{r.model!r}; pass one CellScores per (recording, model)")
        if reserved is not None and r.recording == reserved:
            raise ValueError(
                f"result #{i}: recording name {reserved!r} is reserved for pooled rows; "
                "rename the recording")
        seen[key] = i


class CoverageCell(BaseModel):
    """One expected (recording, model) cell: whether its result may be used, and why not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recording: str
    model: str
    status: CellStatus
    n_cases: int = Field(default=0, description="scored cases of the result; 0 when missing")
    dataset_sha256: str | None = Field(default=None, description="the dataset it answered")
    current_sha256: str | None = Field(
        default=None, description="the recording's current dataset fingerprint, if known")
    reason: str = Field(default="", description="why the cell is missing or stale")


class Coverage(BaseModel):
    """The coverage matrix of expected recordings x models, and the common case set.

    ``cells`` run recording by recording, models in order within each. ``answered`` is the
    number of cases each model has in its ``ok`` cells; ``common_by_recording`` the common cases
    per recording (recordings without any are absent). ``common_cases`` (sorted) is the set
    itself; it is left out of JSON dumps, which keep only its counts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recordings: list[str]
    models: list[str]
    cells: list[CoverageCell]
    ranked_models: list[str] = Field(description="models with at least one ok cell")
    answered: dict[str, int]
    n_common: int
    n_common_frames: int
    common_by_recording: dict[str, int]
    unexpected: list[tuple[str, str]] = Field(
        description="(recording, model) results outside the expected grid; not used")
    conflicts: dict[str, list[str]] = Field(
        description="recording -> the dataset fingerprints its ok cells answered, when they "
                    "differ and no current fingerprint says which is current")
    common_cases: tuple[CaseKey, ...] = Field(default=(), exclude=True)

    @property
    def ranked(self) -> bool:
        """Whether there is a ranking: some case is common to every ranked model."""
        return self.n_common > 0

    @property
    def common_recordings(self) -> list[str]:
        """Recordings that contribute common cases, sorted."""
        return sorted(self.common_by_recording)

    def cell(self, recording: str, model: str) -> CoverageCell | None:
        """The cell of (recording, model), or None when it is not expected."""
        return next((c for c in self.cells if c.recording == recording and c.model == model),
                    None)

    def usable(self, result: CellScores) -> bool:
        """Whether ``result`` is the ``ok`` result of its cell (same dataset it was checked on)."""
        cell = self.cell(result.recording, result.model)
        return (cell is not None and cell.status == "ok"
                and cell.dataset_sha256 == result.dataset_sha256)

    def with_status(self, status: CellStatus) -> list[CoverageCell]:
        """The cells with ``status``, in matrix order."""
        return [c for c in self.cells if c.status == status]

    @property
    def uneven(self) -> bool:
        """Whether some ranked model answered cases outside the common set."""
        return any(self.answered.get(m, 0) != self.n_common for m in self.ranked_models)

    @property
    def needs_warning(self) -> bool:
        """Whether anything is missing, stale, unexpected, conflicting or left out."""
        return bool(self.with_status("missing") or self.with_status("stale") or self.unexpected
                    or self.conflicts or self.uneven or not self.ranked)

    def summary(self) -> str:
        """One paragraph: what the ranking is on, and every cell or case it leaves out."""
        parts = [self._ranking_sentence()]
        missing = self.with_status("missing")
        if missing:
            parts.append("missing: " + ", ".join(f"({c.recording}, {c.model})" for c in missing))
        stale = self.with_status("stale")
        if stale:
            parts.append("stale (excluded): " + ", ".join(
                f"({c.recording}, {c.model}: {c.reason})" for c in stale))
        if self.conflicts:
            parts.append("answered on different datasets, none known to be current, so no case "
                         "of them is common: " + ", ".join(
                             f"{rec} ({', '.join(short_sha(s) for s in shas)})"
                             for rec, shas in sorted(self.conflicts.items())))
        if self.unexpected:
            parts.append("not an expected partition (not used): " + ", ".join(
                f"({rec}, {model})" for rec, model in self.unexpected))
        outside = [m for m in self.ranked_models if self.answered.get(m, 0) != self.n_common]
        if outside and self.ranked:
            parts.append("answered cases outside the common set (not ranked): " + ", ".join(
                f"{m} {self.answered[m] - self.n_common:,} of {self.answered[m]:,}"
                for m in outside))
        return "; ".join(parts) + "."

    def _ranking_sentence(self) -> str:
        if not self.ranked_models:
            return "No ranking: no model has a current result"
        if not self.ranked:
            return (f"No ranking: no case is common to all {len(self.ranked_models)} models "
                    f"({', '.join(self.ranked_models)})")
        recs = self.common_recordings
        models = len(self.ranked_models)
        return (f"Ranked on {_plural(self.n_common, 'common case')} "
                f"({_plural(self.n_common_frames, 'frame')}) of "
                f"{_plural(len(recs), 'recording')} ({', '.join(recs)}), answered by "
                f"{'the one ranked model' if models == 1 else f'all {models} ranked models'}")


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def build_coverage(results: Sequence[CellScores], recordings: Iterable[str] | None = None,
                   models: Iterable[str] | None = None,
                   current_fingerprints: Mapping[str, str] | None = None,
                   stale_cells: Collection[tuple[str, str]] = ()) -> Coverage:
    """The coverage matrix of ``recordings`` x ``models`` and the common case set of ``results``.

    ``recordings`` and ``models`` are every expected recording partition and configured model
    (default: those in ``results``); results outside that grid are listed, not used.
    ``current_fingerprints`` maps a recording to its current dataset fingerprint (the
    ``dataset_sha256`` a fresh result would have); a result on another dataset is stale, as is
    every (recording, model) in ``stale_cells`` (a mapping gives each one's reason). A
    recording without a fingerprint is taken as current. Raises ``ValueError`` when two results
    share a (recording, model) pair.
    """
    check_results(results)
    by_cell = {(r.recording, r.model): r for r in results}
    recs = sorted(set(recordings)) if recordings is not None else sorted(
        {r.recording for r in results})
    mods = sorted(set(models)) if models is not None else sorted({r.model for r in results})
    fingerprints = dict(current_fingerprints or {})
    stale_marked: dict[tuple[str, str], str] = {
        (str(rec), str(model)): (stale_cells[(rec, model)] if isinstance(stale_cells, Mapping)
                                 else "marked stale by the caller")
        for rec, model in stale_cells}
    cells: list[CoverageCell] = []
    ok: list[CellScores] = []
    for rec in recs:
        current = fingerprints.get(rec)
        for model in mods:
            r = by_cell.get((rec, model))
            if r is None:
                cells.append(CoverageCell(recording=rec, model=model, status="missing",
                                          current_sha256=current, reason="no result"))
                continue
            cell = partial(CoverageCell, recording=rec, model=model,
                           n_cases=len(report_of(r).rows), dataset_sha256=r.dataset_sha256,
                           current_sha256=current)
            if (rec, model) in stale_marked:
                cells.append(cell(status="stale", reason=stale_marked[(rec, model)]))
            elif current is not None and r.dataset_sha256 != current:
                cells.append(cell(status="stale",
                                  reason=f"dataset {short_sha(r.dataset_sha256)}, current "
                                         f"{short_sha(current)}"))
            else:
                cells.append(cell(status="ok"))
                ok.append(r)
    grid = {(rec, model) for rec in recs for model in mods}
    unexpected = sorted(k for k in by_cell if k not in grid)
    keys: dict[str, set[CaseKey]] = {}
    frames: dict[CaseKey, tuple[str, int]] = {}
    for r in ok:
        mine = keys.setdefault(r.model, set())
        for row in report_of(r).rows:
            mine.add(case_key(r, row))
            frames[case_key(r, row)] = (r.recording, row.frame_index)
    ranked = sorted(keys)
    common = set.intersection(*keys.values()) if keys else set()
    conflicts = {}
    for rec in recs:
        shas = sorted({r.dataset_sha256 for r in ok if r.recording == rec})
        if len(shas) > 1:
            conflicts[rec] = shas
    per_recording: dict[str, int] = {}
    for rec, _, _ in common:
        per_recording[rec] = per_recording.get(rec, 0) + 1
    return Coverage(
        recordings=recs, models=mods, cells=cells, ranked_models=ranked,
        answered={m: len(keys[m]) for m in ranked}, n_common=len(common),
        n_common_frames=len({frames[k] for k in common}),
        common_by_recording=dict(sorted(per_recording.items())), unexpected=unexpected,
        conflicts=conflicts, common_cases=tuple(sorted(common)))
