"""The leaderboard: per model, rows on the common case set (what models are ranked on) and rows
on every case the model answered, plus a paired comparison of every two models.

Two case sets, named in the ``case_set`` column:

- ``common``: the cases every ranked model answered (``coverage.Coverage``), one pooled
  ``ALL_RECORDINGS`` row per ranked model (the ranking) and one row per recording with common
  cases. Only these rows compare models. There are none when no case is common to all models.
- ``answered``: every case of the model's usable (not missing, not stale) results, pooled and per
  recording. ``comparable`` says whether that case set is the common one; when it is not, the row
  describes the model alone and must not be ranked against another model's.

Pooled rows are recomputed from the pooled per-case rows (correct / n, an interval clustered by
frame, POPE from the summed confusion matrix), never averaged from per-recording percentages:
an average of percentages weights a 3-case recording like a 300-case one. A quantity with an
empty denominator is NaN in the table and null in the JSON, never 0.

The headline (``family_mean``) is the mean over families of a score no answer prior can move
(:mod:`eval_assets.metrics.headline`); ``vqa_accuracy`` is the raw pooled accuracy beside it. With
a ranking, the frequency baseline (each family's most common gold answer, a numeric family's
median; from the labels) is a pooled common row of its own, and every pooled common row says how
far its headline is above the best blind baseline (``over_blind``, paired interval).

CircularEval and position bias (``circular_*``, ``rotation_*``, ``position_bias_*`` columns) are
pooled the same way, from the per-case rows of each cell's CircularEval, and restricted
to the row's case set like accuracy; a result without rotations contributes its cases to
``circular_not_asked`` only. With no rotations at all they are null.
"""

from __future__ import annotations

import io
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from eval_assets.atomic import write_bytes_atomic, write_text_atomic
from eval_assets.jsonio import dumps_json
from eval_assets.metrics.baselines import FREQUENCY_BASELINE, frequency_cases
from eval_assets.metrics.chance_adjusted import chance_adjusted_from_rates
from eval_assets.metrics.circular import CircularGroupStats
from eval_assets.metrics.headline import FamilyScore, HeadlineCase, score_families
from eval_assets.metrics.stats import (
    MIN_RELIABLE_N,
    PairedComparison,
    adjust_comparisons,
    clustered_wilson,
    paired_comparison,
)
from eval_assets.metrics.vqa import VqaGroupStats, VqaRowResult, frame_keys, headline_case
from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.coverage import CaseKey, Coverage, build_coverage, case_key, check_results
from eval_assets.report.headline_columns import headline_columns, over_blind
from eval_assets.report.leaderboard_methods import METHODS
from eval_assets.schemas.results import CellScores
from eval_assets.scoring import METRICS
from eval_assets.scoring.circular import CIRCULAR, CircularPool, circular_columns, pool_circular
from eval_assets.scoring.circular import FAMILY_STATS as CIRCULAR_FAMILY_STATS
from eval_assets.scoring.families import spatial_headline_cases
from eval_assets.scoring.mcq import mcq_measured
from eval_assets.scoring.vqa import BASELINE_TEXT_COLUMNS, HEADLINE_COLUMNS, report_of
from eval_assets.vqa.declarations import family_names

__all__ = [
    "ALL_RECORDINGS",
    "ANSWERED",
    "BASE_COLUMNS",
    "CIRCULAR_COLUMNS",
    "COMMON",
    "FAMILY_STATS",
    "LEADERBOARD_FORMAT",
    "LEADERBOARD_JSON",
    "LEADERBOARD_PARQUET",
    "METHODS",
    "MIN_RELIABLE_N",
    "PooledVqa",
    "build_leaderboard",
    "circular_by_model",
    "family_column",
    "leaderboard_families",
    "leaderboard_json",
    "mcq_measured",
    "paired_comparisons",
    "pool_vqa",
    "ranked_rows",
    "ranking",
    "write_leaderboard",
]

ALL_RECORDINGS = "all recordings"
LEADERBOARD_PARQUET = "leaderboard.parquet"
LEADERBOARD_JSON = "leaderboard.json"
LEADERBOARD_FORMAT = "eval_assets.leaderboard/6"
COMMON = "common"  # case_set of rows on the cases every ranked model answered
ANSWERED = "answered"  # case_set of rows on every case one model answered


# Fixed column order: the row's identity, then each metric's columns in METRICS order; the
# per-family columns follow, families in declaration order (eval_assets.family_spec).
IDENTITY_COLUMNS: tuple[str, ...] = ("recording", "model", "case_set", "comparable")
BASE_COLUMNS: tuple[str, ...] = IDENTITY_COLUMNS + tuple(
    c.name for spec in METRICS for c in spec.columns) + tuple(
    c.name for c in HEADLINE_COLUMNS) + BASELINE_TEXT_COLUMNS
# Per family: the raw accuracy with its interval, chance and SITE's CAA of it (raw_caa), and the
# headline's prior-free score with its interval, its chance and its CAA.
FAMILY_STATS: tuple[str, ...] = ("accuracy", "n", "ci_low", "ci_high", "chance", "caa", "score",
                                 "score_ci_low", "score_ci_high", "score_chance", "raw_caa")
# The family statistics read from the headline's record (FamilyScore field), "caa" computed.
_SCORE_STATS = {"score": "score", "score_ci_low": "ci_low", "score_ci_high": "ci_high",
                "score_chance": "chance", "caa": "score"}
_TEXT_COLUMNS = frozenset(BASELINE_TEXT_COLUMNS)
_INT_COLUMNS = {c.name for spec in METRICS for c in (*spec.columns, *HEADLINE_COLUMNS)
                if c.integer and not c.nullable}
# Nullable counts (pandas Int64): null in 'common' rows, or when nothing was measured.
_NULLABLE_INT_COLUMNS = {c.name for spec in METRICS for c in spec.columns
                         if c.integer and c.nullable}
# Metrics stored per cell, not per case: pooled from a row's cells, null in 'common' rows.
_PER_CELL = tuple(spec for spec in METRICS if spec.pool is not None)
CIRCULAR_COLUMNS = tuple(c.name for c in CIRCULAR.columns)


def family_column(family: str, stat: str) -> str:
    """The leaderboard column of one family statistic, e.g. ``presence__accuracy``."""
    return f"{family}__{stat}"


def leaderboard_families(df: pd.DataFrame) -> list[str]:
    """Families that have columns in ``df``, in the order they appear."""
    suffix = "__accuracy"
    return [c[: -len(suffix)] for c in df.columns if c.endswith(suffix)]


class PooledVqa:
    """VQA statistics of pooled per-case rows: counts, accuracy and the frame-clustered interval.

    ``groups`` are the per-result group statistics the rows came from; only their chance levels
    are used (chance is a per-row mean, so weighting by n gives the pooled per-row mean exactly).
    ``chance`` overrides that, for rows that are a subset of their groups.
    """

    def __init__(self, groups: Iterable[VqaGroupStats], rows: Sequence[VqaRowResult],
                 chance: float | None = None) -> None:
        groups = [g for g in groups if g.n]
        self.n = len(rows)
        self.correct = sum(1 for r in rows if r.status == "correct")
        self.parse_failures = sum(1 for r in rows if r.status == "parse_failure")
        self.failed_calls = sum(1 for r in rows if r.status == "failed_call")
        interval = clustered_wilson(frame_keys(rows), [r.status == "correct" for r in rows])
        self.accuracy = self.correct / self.n if self.n else math.nan
        self.ci_low = interval.low if interval else math.nan
        self.ci_high = interval.high if interval else math.nan
        self.n_frames = interval.n_clusters if interval else 0
        self.design_effect = (_nan_if_none(interval.design_effect) if interval else math.nan)
        self.parse_failure_rate = self.parse_failures / self.n if self.n else math.nan
        weighted = [(g.chance, g.n) for g in groups if g.chance is not None]
        total = sum(n for _, n in weighted)
        self.chance = math.fsum(c * n for c, n in weighted) / total if total else math.nan
        if chance is not None:
            self.chance = chance
        self.caa = _nan_if_none(chance_adjusted_from_rates(self.accuracy, self.chance))


def pool_vqa(groups: Iterable[VqaGroupStats], rows: Sequence[VqaRowResult],
             chance: float | None = None) -> PooledVqa:
    """Pool VQA rows (of one recording or many) with their groups' chance levels (or
    ``chance``, when the rows are a subset of the groups)."""
    return PooledVqa(groups, rows, chance)


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _per_cell_columns(group: Sequence[CellScores] | None) -> dict[str, Any]:
    """The columns of the metrics stored per cell, pooled over ``group``; null without one."""
    row: dict[str, Any] = {}
    for spec in _PER_CELL:
        assert spec.pool is not None
        values = spec.pool(group) if group is not None else {}
        for column in spec.columns:
            value = values.get(column.name)
            row[column.name] = (value if value is not None
                                else pd.NA if column.integer else math.nan)
    return row


def _row(recording: str, model: str, case_set: str, comparable: bool, overall: PooledVqa,
         by_family: dict[str, PooledVqa], group: Sequence[CellScores] | None,
         families: Sequence[str],
         circular: CircularPool = (None, {}),
         cases: Sequence[HeadlineCase] = (),
         baseline: str = "",
         ) -> dict[str, Any]:
    """One leaderboard row; ``group`` None leaves the per-cell metric columns null;
    ``circular`` is ``pool_circular`` of the row's cases; ``cases`` the row's cases as the
    headline reads them (dimOS's of the row's case set and the spatial ones of its cells);
    ``baseline`` which blind baseline the row is ("" for a model under test)."""
    scores = {f.family: f for f in score_families(cases)}
    row: dict[str, Any] = {
        "recording": recording,
        "model": model,
        "case_set": case_set,
        "comparable": comparable,
        "vqa_accuracy": overall.accuracy,
        "vqa_ci_low": overall.ci_low,
        "vqa_ci_high": overall.ci_high,
        "n_cases": overall.n,
        "n_frames": overall.n_frames,
        "design_effect": overall.design_effect,
        "correct": overall.correct,
        "parse_failures": overall.parse_failures,
        "failed_calls": overall.failed_calls,
        "parse_failure_rate": overall.parse_failure_rate,
        "chance": overall.chance,
        **circular_columns(circular[0]),
        **_per_cell_columns(group),
        **headline_columns(cases, scores),
        "raw_caa": overall.caa,
        "over_blind": math.nan, "over_blind_ci_low": math.nan, "over_blind_ci_high": math.nan,
        "baseline": baseline,
        "best_blind": "",
    }
    for family in families:
        stats = by_family.get(family)
        for stat in FAMILY_STATS:
            value = _family_stat(stats, scores.get(family), stat)
            row[family_column(family, stat)] = value if stats is not None or stat != "n" else 0
        circ = circular[1].get(family)
        row[family_column(family, "circular")] = (
            math.nan if circ is None or circ.accuracy is None else circ.accuracy)
        row[family_column(family, "circular_n")] = pd.NA if circ is None else circ.n
    return row


def _family_stat(stats: PooledVqa | None, score: FamilyScore | None, stat: str) -> Any:
    """One family column: the raw statistics of the pooled rows, the prior-free score's
    (``score``, its interval and chance, and ``caa`` of it) from the headline's record."""
    if stat == "raw_caa":
        return stats.caa if stats is not None else math.nan
    if stat in _SCORE_STATS:
        if score is None or score.score is None:
            return math.nan
        if stat == "caa":
            return _nan_if_none(chance_adjusted_from_rates(score.score, score.chance))
        return _nan_if_none(getattr(score, _SCORE_STATS[stat]))
    return getattr(stats, stat) if stats is not None else math.nan


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value


def _ordered_families(results: Sequence[CellScores]) -> list[str]:
    seen = {f for r in results for f in report_of(r).by_family}
    known = [f for f in family_names("dimos") if f in seen]
    return known + sorted(seen - set(known))


# Rows of one model in one scope: each result with the rows of it that are in the case set.
_Part = tuple[CellScores, list[VqaRowResult]]


def _subset_chance(parts: Sequence[_Part]) -> float:
    """Mean chance over the rows of ``parts``, each row at its (result, family) group's chance."""
    chances = [group.chance for r, rows in parts for x in rows
               if (group := report_of(r).by_family.get(x.family)) is not None
               and group.chance is not None]
    return math.fsum(chances) / len(chances) if chances else math.nan


def _pool(parts: Sequence[_Part], families: Sequence[str], whole: bool
          ) -> tuple[PooledVqa, dict[str, PooledVqa]]:
    """Overall and per-family statistics of ``parts``; ``whole``: each part is all of its
    result's rows (so the stored group chance is exact)."""
    rows = [x for _, part in parts for x in part]
    overall = pool_vqa([report_of(r).overall for r, _ in parts], rows,
                       None if whole else _subset_chance(parts))
    by_family = {}
    for f in families:
        fam = [(r, [x for x in part if x.family == f]) for r, part in parts]
        fam = [(r, part) for r, part in fam if part]
        if not fam:  # a family the scope has no case of gets NaN columns and n = 0
            continue
        groups = [report_of(r).by_family for r, _ in fam]
        by_family[f] = pool_vqa([g[f] for g in groups if f in g],
                                [x for _, part in fam for x in part],
                                None if whole else _subset_chance(fam))
    return overall, by_family


def _cases(parts: Sequence[_Part], spatial: bool = True) -> list[HeadlineCase]:
    """The headline's cases of a row: its dimOS rows keyed as the board keys cases, then (with
    ``spatial``) its cells' spatial cases."""
    out = [headline_case(x, case_key(r, x)) for r, part in parts for x in part]
    return out + spatial_headline_cases([r for r, _ in parts]) if spatial else out


def _frequency_row(parts: Sequence[_Part], ranked: Sequence[Sequence[_Part]],
                   families: Sequence[str]) -> tuple[dict[str, Any], list[HeadlineCase]]:
    """The frequency baseline's pooled common row (:data:`FREQUENCY_BASELINE`) and its cases:
    ``parts`` (one ranked model's common rows) answered with each family's most common gold
    answer, and the spatial cases any ranked model (``ranked``: their parts) has, a numeric
    family with its median (:func:`eval_assets.metrics.baselines.frequency_cases`)."""
    spatial: dict[Hashable, HeadlineCase] = {}
    for model_parts in ranked:
        for c in spatial_headline_cases([r for r, _ in model_parts]):
            spatial.setdefault(c.key, c)
    guessed = frequency_cases([*_cases(parts, spatial=False), *spatial.values()])
    picks = {c.key: c.predicted for c in guessed}
    answered = []
    for r, part in parts:
        rows = []
        for x in part:
            pick = picks[case_key(r, x)]
            status = ("parse_failure" if pick is None
                      else "correct" if pick == x.answer else "incorrect")
            rows.append(x.model_copy(update={"predicted_choice": pick, "status": status,
                                             "tier": None if pick is None else "exact"}))
        answered.append((r, rows))
    return (_row(ALL_RECORDINGS, FREQUENCY_BASELINE, COMMON, True,
                 *_pool(answered, families, whole=False), None, families, (None, {}), guessed,
                 "frequency"), guessed)


def build_leaderboard(results: Sequence[CellScores], *,
                      coverage: Coverage | None = None,
                      baselines: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The leaderboard of ``results``: per model, ``common`` rows then ``answered`` rows, and
    last the frequency baseline's pooled common row.

    ``coverage`` (from ``build_coverage`` over the same results, with the expected recordings
    and models and the current dataset fingerprints) decides which results are usable and what
    the common case set is; by default it is built from ``results`` alone (every result
    usable). Per model: if ranked, a pooled ``ALL_RECORDINGS`` row on the common cases and one
    per recording with common cases (``case_set`` ``common``); then a pooled row on every case it
    answered and one per usable result (``answered``; ``comparable`` when that is the common
    set). Rows are sorted by model, case set, pooled row first, then recording. With a ranking,
    a pooled common row of :data:`~eval_assets.metrics.baselines.FREQUENCY_BASELINE` follows
    (``baseline`` "frequency": each family's most common gold answer on the common cases, a
    numeric family's median; no answered rows, null per-cell metrics). ``baselines`` names the
    models that are blind baselines ("random" or "blind", from their runs:
    :func:`eval_assets.report.baselines.baseline_models`); each pooled common row is compared
    with the best of them and the frequency baseline (``best_blind``, ``over_blind`` and its
    interval). Missing metrics are NaN (nullable counts: NA); counts are int64. Columns:
    ``BASE_COLUMNS`` then ``{family}__{stat}`` per family seen (``FAMILY_STATS``). Raises
    ``ValueError`` when two results share a (recording, model) pair or a recording is named
    ``ALL_RECORDINGS``.
    """
    check_results(results, ALL_RECORDINGS)
    if coverage is None:
        coverage = build_coverage(results)
    kinds = dict(baselines or {})
    usable = [r for r in results if coverage.usable(r)]
    common = set(coverage.common_cases)
    families = _ordered_families(usable)
    rows: list[dict[str, Any]] = []
    ranked: dict[str, list[_Part]] = {}
    pooled_cases: dict[str, list[HeadlineCase]] = {}
    for model in sorted({r.model for r in usable}):
        group = sorted((r for r in usable if r.model == model), key=lambda r: r.recording)
        keys = {r.recording: {case_key(r, x) for x in report_of(r).rows} for r in group}
        kind = kinds.get(model, "")
        if common and model in coverage.ranked_models:
            parts = [(r, [x for x in report_of(r).rows if case_key(r, x) in common]) for r in group]
            parts = [(r, part) for r, part in parts if part]
            ranked[model] = parts
            pooled_cases[model] = _cases(parts)
            rows.append(_row(ALL_RECORDINGS, model, COMMON, True,
                             *_pool(parts, families, whole=False), None, families,
                             pool_circular(parts), pooled_cases[model], kind))
            for part in parts:
                rows.append(_row(part[0].recording, model, COMMON, True,
                                 *_pool([part], families, whole=False), None, families,
                                 pool_circular([part]), _cases([part]), kind))
        everything = set().union(*keys.values())
        whole = [(r, list(report_of(r).rows)) for r in group]
        rows.append(_row(ALL_RECORDINGS, model, ANSWERED, bool(common) and everything == common,
                         *_pool(whole, families, whole=True), group, families,
                         pool_circular(whole), _cases(whole), kind))
        for r in group:
            mine = {k for k in common if k[0] == r.recording}
            one = [(r, list(report_of(r).rows))]
            rows.append(_row(r.recording, model, ANSWERED, bool(mine) and keys[r.recording] == mine,
                             *_pool(one, families, whole=True), [r],
                             families, pool_circular(one), _cases(one), kind))
    if ranked:
        row, pooled_cases[FREQUENCY_BASELINE] = _frequency_row(
            next(iter(ranked.values())), list(ranked.values()), families)
        rows.append(row)
        kinds[FREQUENCY_BASELINE] = "frequency"
    over_blind([r for r in rows if r["recording"] == ALL_RECORDINGS and r["case_set"] == COMMON],
               pooled_cases, kinds)
    columns = list(BASE_COLUMNS) + [family_column(f, s) for f in families
                                    for s in (*FAMILY_STATS, *CIRCULAR_FAMILY_STATS)]
    df = pd.DataFrame(rows, columns=columns)
    for column in columns[4:]:  # recording, model, case_set keep pandas' default string dtype
        if column in _TEXT_COLUMNS:
            continue
        if column in _INT_COLUMNS or column.endswith("__n"):
            df[column] = df[column].astype(np.int64)
        elif column in _NULLABLE_INT_COLUMNS or column.endswith(
                "__circular_n"):
            df[column] = df[column].astype("Int64")
        else:
            df[column] = df[column].astype(np.float64)
    df["comparable"] = df["comparable"].astype(bool)
    return df.reset_index(drop=True)


def circular_by_model(results: Sequence[CellScores], *, coverage: Coverage | None = None,
                      ) -> dict[str, tuple[str, CircularGroupStats, dict[str, CircularGroupStats]]]:
    """Each model's pooled CircularEval (overall, by family) for the report: on the common
    cases when the model is ranked, else on every case it answered (the case set is returned
    first, ``COMMON`` or ``ANSWERED``). Models without any rotations are left out. The same
    pooling as the leaderboard's ``ALL_RECORDINGS`` rows, so the numbers agree."""
    if coverage is None:
        coverage = build_coverage(results)
    usable = [r for r in results if coverage.usable(r)]
    common = set(coverage.common_cases)
    out = {}
    for model in sorted({r.model for r in usable}):
        group = sorted((r for r in usable if r.model == model), key=lambda r: r.recording)
        case_set = COMMON if common and model in coverage.ranked_models else ANSWERED
        parts = [(r, [x for x in report_of(r).rows
                      if case_set == ANSWERED or case_key(r, x) in common]) for r in group]
        overall, by_family = pool_circular([(r, part) for r, part in parts if part])
        if overall is not None:
            out[model] = (case_set, overall, by_family)
    return out


def ranked_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The pooled ``common`` rows of a leaderboard, best first: by the mean over families, ties
    by pooled accuracy, then model name; the blind baselines (``baseline`` not "", the
    frequency baseline's row included) are ranked among the models. The ranking; empty when
    there is none."""
    pooled = df[(df["recording"] == ALL_RECORDINGS) & (df["case_set"] == COMMON)].copy()
    pooled["_rank_key"] = pooled["family_mean"].fillna(-1.0)
    pooled["_tie_key"] = pooled["vqa_accuracy"].fillna(-1.0)
    pooled = pooled.sort_values(["_rank_key", "_tie_key", "model"],
                                ascending=[False, False, True], kind="stable")
    return pooled.drop(columns=["_rank_key", "_tie_key"])


def ranking(df: pd.DataFrame) -> dict[str, Any]:
    """The ranking as plain data: ``ranked``, the common case and frame counts, and the models
    best first with accuracy and interval (null accuracy: no case)."""
    pooled = ranked_rows(df)
    n = int(pooled["n_cases"].iloc[0]) if not pooled.empty else 0
    return {
        "ranked": n > 0,
        "case_set": COMMON,
        "n_common_cases": n,
        "n_common_frames": int(pooled["n_frames"].iloc[0]) if not pooled.empty else 0,
        "order": [{"rank": i, "model": r.model, "family_mean": _json_value(r.family_mean),
                   "family_mean_ci_low": _json_value(r.family_mean_ci_low),
                   "family_mean_ci_high": _json_value(r.family_mean_ci_high),
                   "n_families": _json_value(r.n_families),
                   "n_families_left_out": _json_value(r.n_families_left_out),
                   "n_families_uninformative": _json_value(r.n_families_uninformative),
                   "headline_chance": _json_value(r.headline_chance),
                   "caa": _json_value(r.caa),
                   "raw_caa": _json_value(r.raw_caa),
                   "baseline": r.baseline or None,
                   "best_blind": r.best_blind or None,
                   "over_blind": _json_value(r.over_blind),
                   "over_blind_ci_low": _json_value(r.over_blind_ci_low),
                   "over_blind_ci_high": _json_value(r.over_blind_ci_high),
                   "vqa_accuracy": _json_value(r.vqa_accuracy),
                   "vqa_ci_low": _json_value(r.vqa_ci_low),
                   "vqa_ci_high": _json_value(r.vqa_ci_high)}
                  for i, r in enumerate(pooled.itertuples(index=False), start=1)] if n else [],
    }


def _json_value(value: Any) -> Any:
    if value is pd.NA:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def paired_comparisons(results: Sequence[CellScores], *,
                       coverage: Coverage | None = None,
                       by_family: bool = True) -> list[PairedComparison]:
    """Every pair of models (a < b by name), compared on the cases both have rows for: overall,
    then (``by_family``) per question family, all Holm-adjusted as one table.

    Only usable results count (``coverage``, default: all). Cases are matched by (recording,
    dataset, case id) across all recordings; a case counts as correct only when its status is
    "correct", so parse failures and failed calls are wrong, as in accuracy. Frames (recording,
    frame_index) are the clusters. The overall comparisons come first (``family`` None, pairs in
    order), then each pair's families (in declaration order, then by name) with a common
    case. McNemar's p of every comparison returned is adjusted over all of them
    (:func:`eval_assets.metrics.stats.adjust_comparisons`, Holm), which decides ``significant``.
    """
    if coverage is not None:
        results = [r for r in results if coverage.usable(r)]
    by_model: dict[str, dict[CaseKey, VqaRowResult]] = {}
    for r in sorted(results, key=lambda r: (r.model, r.recording)):
        rows = by_model.setdefault(r.model, {})
        for row in report_of(r).rows:
            rows[case_key(r, row)] = row
    models = sorted(by_model)
    overall: list[PairedComparison] = []
    families: list[PairedComparison] = []
    order = {f: i for i, f in enumerate(family_names("dimos"))}
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            common = sorted(set(by_model[a]) & set(by_model[b]))
            rows_a = [by_model[a][k] for k in common]
            rows_b = [by_model[b][k] for k in common]
            overall.append(_compare(a, b, rows_a, rows_b, None))
            if not by_family:
                continue
            for family in sorted({x.family for x in rows_a},
                                 key=lambda f: (order.get(f, len(order)), f)):
                pick = [j for j, x in enumerate(rows_a) if x.family == family]
                families.append(_compare(a, b, [rows_a[j] for j in pick],
                                         [rows_b[j] for j in pick], family))
    return adjust_comparisons([*overall, *families], method="holm")


def _compare(a: str, b: str, rows_a: Sequence[VqaRowResult], rows_b: Sequence[VqaRowResult],
             family: str | None) -> PairedComparison:
    return paired_comparison(a, b, frame_keys(rows_a), [x.status == "correct" for x in rows_a],
                             [x.status == "correct" for x in rows_b], family=family)


def leaderboard_json(df: pd.DataFrame, comparisons: Sequence[PairedComparison] = (),
                     coverage: Coverage | None = None, baselines: Sequence[FamilyBaselines] = (),
                     published_from: Sequence[BaseModel] = ()) -> str:
    """The leaderboard as indented JSON: format, methods, the ranking (on the common cases), the
    coverage matrix and its summary (null without ``coverage``), rows (NaN -> null, columns in
    table order), the paired comparisons (overall ones under ``paired_comparisons``, per-family
    ones under ``family_comparisons``), the per-family baselines and, last, what each ok
    cell was published from (``published_from``: :class:`~.board.PublishedFrom`)."""
    records = [
        {column: _json_value(value) for column, value in zip(df.columns, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]
    cover = None
    if coverage is not None:
        cover = {"summary": coverage.summary(), **coverage.model_dump(mode="json")}
    document = {
        "format": LEADERBOARD_FORMAT,
        "methods": METHODS,
        "ranking": ranking(df),
        "coverage": cover,
        "rows": records,
        "paired_comparisons": [c.model_dump(mode="json") for c in comparisons
                               if c.family is None],
        "baselines": [b.model_dump(mode="json") for b in baselines],
        "family_comparisons": [c.model_dump(mode="json") for c in comparisons
                               if c.family is not None],
        "published_from": [p.model_dump(mode="json") for p in published_from],
    }
    return dumps_json(document, ensure_ascii=False, allow_nan=False)


def write_leaderboard(df: pd.DataFrame, out_dir: Path,
                      comparisons: Sequence[PairedComparison] = (),
                      coverage: Coverage | None = None,
                      baselines: Sequence[FamilyBaselines] = (),
                      published_from: Sequence[BaseModel] = ()) -> tuple[Path, Path]:
    """Write ``leaderboard.parquet`` (the rows) and ``leaderboard.json`` (rows, methods, ranking,
    ``coverage``, ``comparisons``, ``baselines`` and ``published_from``) into ``out_dir``,
    atomically.

    Both are byte-identical for identical inputs: parquet without the index, with fixed
    compression; JSON with fixed key order; comparisons use a fixed-seed generator.
    """
    out_dir = Path(out_dir)
    table = pa.Table.from_pandas(df, preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=3)
    parquet_path = write_bytes_atomic(out_dir / LEADERBOARD_PARQUET, buf.getvalue())
    json_path = write_text_atomic(out_dir / LEADERBOARD_JSON,
                                  leaderboard_json(df, comparisons, coverage, baselines,
                                                   published_from))
    return parquet_path, json_path
