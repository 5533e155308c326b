"""Per-case blind solvability: VSI-Bench-Debiased's Test-set Stress-Test (TsT), random-forest
variant, and its Iterative Bias Pruning (``../shared/specs/validity.md``).

A template-made benchmark leaks priors through its wording, its object names and its answer
distribution. The per-family blind and frequency baselines say *whether* a family leaks; TsT says
*which cases* do: a random forest that sees no pixel is trained on the other cases of the
dataset and asked each held-out case. Its out-of-fold success on a case is that case's **bias
score** s(x) in [0, 1]:

- a case with choices (dimOS's cases and the spatial choice cases, one classifier): the forest
  scores every (case, choice) pair as gold or not; s is the gold choice's share of the case's
  scores, the out-of-fold probability of the gold choice;
- a numeric case (one regressor on the log of the answer): s is the score of its out-of-fold
  prediction as the numeric metric scores a reply (:func:`eval_assets.metrics.numeric_rules.
  case_score`: MRA, OSI's zero rule for a motion distance, mean angular accuracy for degrees).

Features, none of them from a pixel (:func:`case_features`, :func:`choice_features`): the
question's template (its text with object names and numbers cut out) and its words, the object
names and their count, the numbers in the question, the unit, the frame count, the family, and
per choice its text, words, position from either end, count, length, its number and whether it
is one of the object names (and which). Folds: k (default 5) over the cases grouped by their
frame (a frame's questions stay in one fold; a case across frames by its first frame), assigned
by a seeded shuffle; fewer frames than k give as many folds as frames, and a fit with fewer than
two frames gives no score (null, never a number), and so does a case whose family has no case
in the other folds (a family of one case, or all on one frame): the forest never saw that
family's answers. The forest has a fixed ``random_state`` and
``n_jobs=1``: the same dataset gives the same scores, byte for byte.

A case is **flagged** when s >= the threshold (default 0.8). Per family: mean s, the share
flagged, and the TsT accuracy (the forest's argmax choice, ties shared; its MRA for numbers): the
blind upper bound. :func:`iterative_bias_pruning` drops the flagged cases and refits until none
is flagged, a family would fall under the floor, or the round limit is reached.

A family can also be guessable as a whole though no case reaches the threshold: its answer prior
(:mod:`eval_assets.vqa.answer_prior`) is in the family summary. :mod:`eval_assets.vqa.reaudit`
re-runs the audit on a published or edited dataset folder.

Files (the dataset's private audit; a model under test never sees them): ``audit/bias.jsonl``
(per case: id, family, bias_score, flagged) and ``audit/bias.json`` (configuration, per-family
summary, what was pruned and why).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from eval_assets.jsonio import dumps_json, read_json, read_jsonl
from eval_assets.schemas.spatial import SpatialCase, SpatialLabel
from eval_assets.schemas.vqa import DATASET_AUDIT, Case, Label, dumps_line
from eval_assets.vqa.answer_prior import PRIOR_MARGIN, family_prior

AUDIT_BIAS_CASES = "bias.jsonl"
AUDIT_BIAS_SUMMARY = "bias.json"
METHOD = ("TsT (VSI-Bench-Debiased, arXiv 2511.04655), random-forest variant: out-of-fold "
          "probability of the gold choice (classifier over case-choice pairs) or out-of-fold "
          "MRA (regressor on log answer), folds grouped by frame")
FEATURES = ("question template id and its words", "object names and their count",
            "numbers in the question", "unit", "frame count", "family",
            "per choice: text, words, position (from start and end), count, length, number, "
            "whether and which object name")
# Scores are written with this many decimals, and flagged on the written value, so a reader
# re-deriving the flags from the file finds the same ones.
DECIMALS = 4

Kind = Literal["choice", "number"]
_WORD = re.compile(r"<obj>|<num>|[a-z]+")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?")


class BiasConfig(BaseModel):
    """How the blind-solvability audit runs (recorded in ``audit/run.json`` and
    ``audit/bias.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(default=0.8, gt=0, le=1,
                             description="a case with bias score >= this is flagged")
    folds: int = Field(default=5, ge=2, description="k of the k-fold over frames")
    seed: int = Field(default=0, description="seeds the fold shuffle and the forests")
    trees: int = Field(default=100, ge=1, description="trees per random forest")
    prune: bool = Field(default=False, description="Iterative Bias Pruning before publishing")
    prune_floor: int = Field(default=5, ge=0,
                             description="pruning never leaves a family with fewer cases")
    prune_rounds: int = Field(default=10, ge=1, description="most refits while pruning")


@dataclass(frozen=True)
class BiasCase:
    """What the blind forest may know about one case (no pixel), and its gold answer."""

    id: str
    family: str
    kind: Kind
    question: str
    choices: tuple[str, ...]
    object_names: tuple[str, ...]
    frame: int
    n_frames: int
    unit: str | None
    answer: str


class CaseBias(BaseModel):
    """One line of ``audit/bias.jsonl``; ``bias_score`` is None when no fold could hold the
    case out (a fit over fewer than two frames)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    family: str
    bias_score: float | None
    flagged: bool


class FamilyBias(BaseModel):
    """Per family: how blind-solvable its cases are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    measure: Literal["gold_probability", "mra"]
    n: int
    n_scored: int = Field(description="cases with a bias score")
    mean_bias_score: float | None
    flagged: int
    flagged_share: float | None = Field(description="flagged / n_scored")
    blind_upper_bound: float | None = Field(
        description="TsT accuracy: the forest's argmax choice (ties shared) or its MRA")
    # The family's answer prior (eval_assets.vqa.answer_prior): its most common gold answer (a
    # numeric family's median), what answering it everywhere scores, a choice family's chance
    # (mean 1 / number of choices), and whether that is guessable beyond chance.
    majority_answer: str | None = None
    prior_score: float | None = None
    chance: float | None = None
    prior_flagged: bool = False


class PrunedCase(BaseModel):
    """A case Iterative Bias Pruning dropped, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    family: str
    bias_score: float
    round: int
    why: str


class PruningRound(BaseModel):
    """One fit of the pruning loop."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int
    cases: int
    flagged: int
    pruned: int


class Pruning(BaseModel):
    """What Iterative Bias Pruning did: its rounds, why it stopped, the cases it dropped."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    floor: int
    max_rounds: int
    rounds: list[PruningRound]
    stopped: str
    pruned: list[PrunedCase]


class BiasSummary(BaseModel):
    """``audit/bias.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    features: list[str]
    config: BiasConfig
    sklearn_version: str
    folds: dict[str, int | None] = Field(
        description="folds used per fit (choice, number); None: under two frames, no score")
    families: dict[str, FamilyBias]
    pruning: Pruning | None = None
    prior_margin: float | None = Field(
        default=None, description="a family is prior-flagged above chance by more than this")


@dataclass(frozen=True)
class BiasResult:
    """Scores of one fit: per case its bias score (None: not scorable) and its TsT success."""

    scores: dict[str, float | None]
    tst: dict[str, float | None]
    folds: dict[str, int | None]


# --- cases -------------------------------------------------------------------------------------

def case_of_label(case: Case, label: Label) -> BiasCase:
    """A dimOS case with its audit label."""
    return BiasCase(id=case.id, family=label.family, kind="choice", question=case.question,
                    choices=tuple(case.choices), object_names=tuple(label.object_names),
                    frame=label.frame_index, n_frames=1, unit=None, answer=label.answer)


def case_of_spatial(case: SpatialCase, label: SpatialLabel) -> BiasCase:
    """A spatial case with its audit label; grouped by its first frame."""
    frames = label.frame_indices or [label.frame_index if label.frame_index is not None else 0]
    return BiasCase(id=case.id, family=label.family, kind=case.answer_type,
                    question=case.question, choices=tuple(case.choices or ()),
                    object_names=tuple(label.object_names), frame=frames[0],
                    n_frames=len(case.images), unit=case.unit, answer=label.answer)


def dataset_cases(dataset_dir: Path) -> list[BiasCase]:
    """Every case of a published dataset of ours (dimOS's, then the spatial ones), in file
    order, from its public cases and its audit labels."""
    from eval_assets.schemas.spatial import AUDIT_SPATIAL_LABELS, SPATIAL_CASES
    from eval_assets.schemas.vqa import AUDIT_LABELS, DATASET_CASES

    root = Path(dataset_dir)
    cases = read_jsonl(root / DATASET_CASES, Case)
    labels = {lab.id: lab for lab in read_jsonl(root / DATASET_AUDIT / AUDIT_LABELS, Label)}
    out = [case_of_label(c, labels[c.id]) for c in cases]
    if (root / SPATIAL_CASES).is_file():
        spatial = {lab.id: lab for lab in read_jsonl(root / DATASET_AUDIT / AUDIT_SPATIAL_LABELS,
                                                     SpatialLabel)}
        out += [case_of_spatial(c, spatial[c.id])
                for c in read_jsonl(root / SPATIAL_CASES, SpatialCase)]
    return out


# --- features ----------------------------------------------------------------------------------

def template_of(question: str, names: Sequence[str]) -> str:
    """The question with its object names (longest first) and numbers cut out: its template."""
    text = question.lower()
    for name in sorted({n.lower() for n in names if n.strip()}, key=lambda n: (-len(n), n)):
        text = text.replace(name, "<obj>")
    return _NUMBER.sub("<num>", text)


def _number(text: str) -> float | None:
    match = _NUMBER.search(text)
    return None if match is None else float(match.group().replace(",", "."))


def case_features(case: BiasCase) -> dict[str, float]:
    """The pixel-free features of a case (one-hot names as ``key=value``)."""
    template = template_of(case.question, case.object_names)
    features: dict[str, float] = {f"family={case.family}": 1.0, f"template={template}": 1.0,
                                  "n_frames": float(case.n_frames),
                                  "n_names": float(len(case.object_names)),
                                  "n_choices": float(len(case.choices))}
    for word in _WORD.findall(template):
        features[f"word={word}"] = features.get(f"word={word}", 0.0) + 1.0
    for name in case.object_names:
        features[f"name={name.lower()}"] = 1.0
    numbers = [float(m.replace(",", ".")) for m in _NUMBER.findall(case.question)]
    features["n_numbers"] = float(len(numbers))
    for i, value in enumerate(numbers[:4]):
        features[f"number{i}"] = value
    if case.unit is not None:
        features[f"unit={case.unit}"] = 1.0
    return features


def choice_features(case: BiasCase, position: int) -> dict[str, float]:
    """The features of one (case, choice) pair: the case's and the choice's own."""
    text = case.choices[position]
    names = [n.lower() for n in case.object_names]
    features = case_features(case)
    features.update({"position": float(position),
                     "position_from_end": float(len(case.choices) - 1 - position),
                     f"position={position}": 1.0, f"choice={text.lower()}": 1.0,
                     "choice_length": float(len(text)),
                     "choice_is_name": float(text.lower() in names),
                     "choice_name_index": float(names.index(text.lower())
                                                if text.lower() in names else -1)})
    for word in _WORD.findall(text.lower()):
        features[f"choice_word={word}"] = features.get(f"choice_word={word}", 0.0) + 1.0
    value = _number(text)
    if value is not None:
        features["choice_number"] = value
    return features


# --- folds and fits ----------------------------------------------------------------------------

def frame_folds(frames: Sequence[int], k: int, seed: int) -> tuple[list[int], int] | None:
    """A fold per case such that a frame's cases share a fold, and the number of folds.

    The frames are shuffled with ``seed`` and each goes, in that order, to the fold with the
    fewest cases so far (the lowest fold on a tie): deterministic, balanced by cases. With fewer
    than ``k`` frames there are as many folds as frames; under two frames, None.
    """
    distinct = sorted(set(frames))
    folds = min(k, len(distinct))
    if folds < 2:
        return None
    sizes = Counter(frames)
    order = np.random.default_rng(seed).permutation(len(distinct))
    load = [0] * folds
    fold_of: dict[int, int] = {}
    for i in order:
        frame = distinct[int(i)]
        target = min(range(folds), key=lambda f: (load[f], f))
        fold_of[frame] = target
        load[target] += sizes[frame]
    return [fold_of[f] for f in frames], folds


def _vectorise(rows: Sequence[dict[str, float]]) -> Any:
    from sklearn.feature_extraction import DictVectorizer

    return DictVectorizer(sparse=True, sort=True).fit_transform(rows)


def _choice_scores(cases: Sequence[BiasCase], config: BiasConfig
                   ) -> tuple[dict[str, float | None], dict[str, float | None], int | None]:
    from sklearn.ensemble import RandomForestClassifier

    none: dict[str, float | None] = {c.id: None for c in cases}
    split = frame_folds([c.frame for c in cases], config.folds, config.seed)
    if split is None:
        return none, dict(none), None
    fold_of_case, folds = split
    owner, rows, gold = [], [], []
    for i, case in enumerate(cases):
        for position, choice in enumerate(case.choices):
            owner.append(i)
            rows.append(choice_features(case, position))
            gold.append(int(choice == case.answer))
    matrix = _vectorise(rows)
    owner_arr, gold_arr = np.asarray(owner), np.asarray(gold)
    row_fold = np.asarray(fold_of_case)[owner_arr]
    probability = np.zeros(len(rows))
    for fold in range(folds):
        train, test = row_fold != fold, row_fold == fold
        forest = RandomForestClassifier(n_estimators=config.trees, random_state=config.seed,
                                        n_jobs=1)
        forest.fit(matrix[train], gold_arr[train])
        classes = list(forest.classes_)
        if 1 in classes:
            probability[test] = forest.predict_proba(matrix[test])[:, classes.index(1)]
    scores, tst = dict(none), dict(none)
    trained = _family_trained(cases, fold_of_case)
    for i, case in enumerate(cases):
        if not trained[i]:
            continue
        p = probability[owner_arr == i]
        is_gold = gold_arr[owner_arr == i] == 1
        total = float(p.sum())
        # No choice scored at all: the forest knows nothing, each choice is as likely.
        scores[case.id] = float(p[is_gold].sum() / total) if total > 0 else 1.0 / len(p)
        tied = p >= p.max()
        tst[case.id] = float(is_gold[tied].any()) / int(tied.sum())
    return scores, tst, folds


def _number_scores(cases: Sequence[BiasCase], config: BiasConfig
                   ) -> tuple[dict[str, float | None], int | None]:
    from sklearn.ensemble import RandomForestRegressor

    none: dict[str, float | None] = {c.id: None for c in cases}
    split = frame_folds([c.frame for c in cases], config.folds, config.seed)
    if split is None:
        return none, None
    fold_of_case, folds = split
    matrix = _vectorise([case_features(c) for c in cases])
    # Scored as the numeric metric scores replies (by unit: MRA, OSI's zero rule for the motion
    # distances, mean angular accuracy for degrees); imported here, scoring imports vqa.
    from eval_assets.metrics.numeric_rules import PARSER_UNITS, case_score

    targets = np.asarray([float(c.answer) for c in cases])
    bad_cases = [c for c, t in zip(cases, targets, strict=True)
                 if (t < 0 and c.unit != "deg") or (t == 0 and c.unit != "m")]
    if bad_cases:
        bad = bad_cases[0]
        raise ValueError(f"numeric case {bad.id!r} has answer {bad.answer!r}: only a motion "
                         "distance may be 0 and only an angle negative; regenerate the dataset")
    fold_arr = np.asarray(fold_of_case)
    positive = bool((targets > 0).all())
    predicted = np.zeros(len(cases))
    for fold in range(folds):
        train, test = fold_arr != fold, fold_arr == fold
        forest = RandomForestRegressor(n_estimators=config.trees, random_state=config.seed,
                                       n_jobs=1)
        # Relative error is what MRA scores, so the forest fits the log of the answer; with a
        # motion distance of 0 or a negative angle among them, a signed log1p.
        if positive:
            forest.fit(matrix[train], np.log(targets[train]))
            predicted[test] = np.exp(forest.predict(matrix[test]))
        else:
            forest.fit(matrix[train], np.sign(targets[train]) * np.log1p(np.abs(targets[train])))
            fitted = forest.predict(matrix[test])
            predicted[test] = np.sign(fitted) * np.expm1(np.abs(fitted))
    trained = _family_trained(cases, fold_of_case)
    scores: dict[str, float | None] = {
        c.id: case_score(float(v), float(t), c.family, PARSER_UNITS[c.unit]) if known else None
        for c, v, t, known in zip(cases, predicted, targets, trained, strict=True)}
    return scores, folds


def _family_trained(cases: Sequence[BiasCase], fold_of_case: Sequence[int]) -> list[bool]:
    """Per case, whether another fold holds a case of its family: without one, the forest never
    saw that family's answers, and its guess would say nothing about the family's priors (a
    family of one case, or all on one frame), so the case gets no score."""
    total = Counter(c.family for c in cases)
    same_fold = Counter((c.family, f) for c, f in zip(cases, fold_of_case, strict=True))
    return [total[c.family] > same_fold[(c.family, f)]
            for c, f in zip(cases, fold_of_case, strict=True)]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)


def score_cases(cases: Sequence[BiasCase], config: BiasConfig) -> BiasResult:
    """Every case's bias score and TsT success, from one classifier over the choice cases and
    one regressor over the numeric cases (each k-fold over frames); rounded to
    :data:`DECIMALS`."""
    choice = [c for c in cases if c.kind == "choice"]
    number = [c for c in cases if c.kind == "number"]
    scores: dict[str, float | None] = {}
    tst: dict[str, float | None] = {}
    folds: dict[str, int | None] = {}
    if choice:
        choice_scores, choice_tst, folds["choice"] = _choice_scores(choice, config)
        scores.update(choice_scores)
        tst.update(choice_tst)
    if number:
        number_scores, folds["number"] = _number_scores(number, config)
        scores.update(number_scores)
        tst.update(number_scores)
    return BiasResult(scores={c.id: _round(scores[c.id]) for c in cases},
                      tst={c.id: tst[c.id] for c in cases}, folds=folds)


def flagged(score: float | None, config: BiasConfig) -> bool:
    """Whether a (rounded) bias score is at or above the threshold; no score is no flag."""
    return score is not None and score >= config.threshold


def case_records(cases: Sequence[BiasCase], result: BiasResult, config: BiasConfig
                 ) -> list[CaseBias]:
    """The audit lines, in case order."""
    return [CaseBias(id=c.id, family=c.family, bias_score=result.scores[c.id],
                     flagged=flagged(result.scores[c.id], config)) for c in cases]


def family_summary(cases: Sequence[BiasCase], result: BiasResult, config: BiasConfig
                   ) -> dict[str, FamilyBias]:
    """Per family (sorted by name): n, scored, mean score, flagged share, blind upper bound,
    and its answer prior (:func:`family_prior`)."""
    out: dict[str, FamilyBias] = {}
    for family in sorted({c.family for c in cases}):
        mine = [c for c in cases if c.family == family]
        scored = [result.scores[c.id] for c in mine if result.scores[c.id] is not None]
        values = [s for s in scored if s is not None]
        tst = [t for c in mine if (t := result.tst[c.id]) is not None]
        n_flagged = sum(1 for s in values if s >= config.threshold)
        out[family] = FamilyBias(
            measure="mra" if mine[0].kind == "number" else "gold_probability", n=len(mine),
            n_scored=len(values),
            mean_bias_score=_round(math.fsum(values) / len(values)) if values else None,
            flagged=n_flagged,
            flagged_share=_round(n_flagged / len(values)) if values else None,
            blind_upper_bound=_round(math.fsum(tst) / len(tst)) if tst else None,
            **family_prior(mine))
    return out


# --- Iterative Bias Pruning --------------------------------------------------------------------

def iterative_bias_pruning(cases: Sequence[BiasCase], config: BiasConfig
                           ) -> tuple[list[BiasCase], BiasResult, Pruning]:
    """The paper's IBP: fit, drop the flagged cases, refit, until none is flagged.

    Each round drops every flagged case, highest score first within its family, but never
    takes a family under ``config.prune_floor`` cases; it stops when nothing is flagged, when
    the floor leaves nothing to drop ("floor reached") or after ``config.prune_rounds`` fits.
    Returns the cases kept, the last fit's scores of them and the record of what was dropped.
    """
    kept = list(cases)
    rounds: list[PruningRound] = []
    pruned: list[PrunedCase] = []
    for number in range(1, config.prune_rounds + 1):
        result = score_cases(kept, config)
        flags = [c for c in kept if flagged(result.scores[c.id], config)]
        if not flags:
            rounds.append(PruningRound(round=number, cases=len(kept), flagged=0, pruned=0))
            return kept, result, Pruning(floor=config.prune_floor, max_rounds=config.prune_rounds,
                                         rounds=rounds, stopped="no case flagged", pruned=pruned)
        if number == config.prune_rounds:
            rounds.append(PruningRound(round=number, cases=len(kept), flagged=len(flags),
                                       pruned=0))
            return kept, result, Pruning(
                floor=config.prune_floor, max_rounds=config.prune_rounds, rounds=rounds,
                stopped=f"round limit {config.prune_rounds} reached with {len(flags)} flagged",
                pruned=pruned)
        sizes = Counter(c.family for c in kept)
        drop: list[BiasCase] = []
        for family in sorted({c.family for c in flags}):
            ranked = sorted((c for c in flags if c.family == family),
                            key=lambda c: (-(result.scores[c.id] or 0.0), c.id))
            drop += ranked[:max(0, sizes[family] - config.prune_floor)]
        rounds.append(PruningRound(round=number, cases=len(kept), flagged=len(flags),
                                   pruned=len(drop)))
        if not drop:
            return kept, result, Pruning(
                floor=config.prune_floor, max_rounds=config.prune_rounds, rounds=rounds,
                stopped=f"floor reached: {len(flags)} flagged cases are in families at "
                        f"{config.prune_floor} cases", pruned=pruned)
        for c in drop:
            score = result.scores[c.id] or 0.0
            pruned.append(PrunedCase(
                id=c.id, family=c.family, bias_score=score, round=number,
                why=f"bias score {score:g} >= {config.threshold:g}: a blind random forest "
                    f"trained on the other folds solves it"))
        gone = {c.id for c in drop}
        kept = [c for c in kept if c.id not in gone]
    raise AssertionError("unreachable: the last round returns")  # pragma: no cover


# --- the audit files ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BiasAudit:
    """What the dataset publishes: per case lines, the summary, and the ids kept."""

    cases: list[CaseBias]
    summary: BiasSummary
    kept: list[str]


def audit_cases(cases: Sequence[BiasCase], config: BiasConfig) -> BiasAudit:
    """Score ``cases`` (pruning first when ``config.prune``) into the audit to publish."""
    import sklearn

    pruning = None
    if config.prune:
        kept, result, pruning = iterative_bias_pruning(cases, config)
    else:
        kept, result = list(cases), score_cases(cases, config)
    summary = BiasSummary(method=METHOD, features=list(FEATURES), config=config,
                          sklearn_version=sklearn.__version__, folds=result.folds,
                          families=family_summary(kept, result, config), pruning=pruning,
                          prior_margin=PRIOR_MARGIN)
    return BiasAudit(cases=case_records(kept, result, config), summary=summary,
                     kept=[c.id for c in kept])


def write_bias_audit(root: Path, audit: BiasAudit) -> None:
    """Write ``audit/bias.jsonl`` and ``audit/bias.json`` under the dataset folder ``root``,
    each atomically (a folder being published appears whole by its own rename; a published one
    re-audited never shows a half-written file)."""
    from eval_assets.atomic import write_text_atomic

    folder = root / DATASET_AUDIT
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / AUDIT_BIAS_CASES,
                      "".join(dumps_line(c) + "\n" for c in audit.cases))
    write_text_atomic(folder / AUDIT_BIAS_SUMMARY,
                      dumps_json(audit.summary.model_dump(mode="json")))


def read_bias_cases(dataset_dir: Path) -> dict[str, CaseBias] | None:
    """``audit/bias.jsonl`` by case id; None when the dataset has none (written by dimOS, or
    before the audit existed)."""
    path = Path(dataset_dir) / DATASET_AUDIT / AUDIT_BIAS_CASES
    if not path.is_file():
        return None
    return {r.id: r for r in read_jsonl(path, CaseBias, "regenerate the dataset")}


def read_bias_summary(dataset_dir: Path) -> BiasSummary | None:
    """``audit/bias.json``; None when absent."""
    path = Path(dataset_dir) / DATASET_AUDIT / AUDIT_BIAS_SUMMARY
    if not path.is_file():
        return None
    return BiasSummary.model_validate(read_json(path))
