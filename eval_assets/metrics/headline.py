"""The headline: the mean over question families of a score no answer prior can move, each
family weighing the same (VSI-Bench's "overall"), so neither a large family nor a family that is
mostly one answer makes the headline its own.

Why not accuracy. The families as we generate them are often nearly one answer (presence is
~95 % "no": we ask about every vocabulary word the detector does not find; object_count is
"one"), so a blind guesser giving each family's most common answer scored 78 % on the mean of
family accuracies against 33 % for a uniform guess, and SITE's chance-adjusted accuracy (which
takes out only what a *uniform* guess gets) called it +0.855. Plain balanced accuracy (the mean
over gold answers of their recall) gives a constant answer 1/K, K the gold answers present, but a
uniform guess over n > K choices 1/n: the two blind baselines would still be ranked apart.

**Choice families: balanced accuracy without the credit of answering blindly.** Over a family's
cases, for each gold answer c: recall(c) = the share of the cases whose gold is c answered c;
false alarms(c) = the share of the cases where c was offered but is not the gold that were
answered c. The family's informedness J = the mean over its gold answers of recall(c) - false
alarms(c) (the macro one-vs-rest Youden index). Any answer that does not depend on the image -
a constant, the family's most common gold, a uniform or any other random pick, no answer at all
- has recall(c) = false alarms(c) for every c in expectation, so J = 0; a constant answer
(or one never in the choices) has J = 0 exactly, on any sample. Every case right: J = 1. J is put
on the accuracy scale of the family's chance level: **score = chance + (1 - chance) * J**, with
**chance = the mean of 1 / number of choices** over its cases (what a uniform guess gets, as
the leaderboard's chance column). For a yes/no family this *is* balanced accuracy (the mean of
the two recalls); below chance is possible. A gold answer counts only when it is the gold of at
least :data:`MIN_CLASS_N` cases and was offered but wrong on at least as many: a recall over one
or two cases is noise whose delta-method variance reads 0 (and a choice offered only when it is
the answer is a leak, which the bias audit flags). Leaving a gold answer out keeps every answer
prior at J = 0 (each counted term is 0 for it). A family with no counted answer - every case has
the same gold answer, or its answers are object names or routes that each recur a few times -
says nothing measurable beyond a prior, and is left out (``FamilyMean.uninformative``); its raw
accuracy is still shown.

**Numeric families: MRA above the median's.** The family's prior is answering its median gold
number on every case (VSI-Bench's "Chance Level (Frequency)"), scored by the family's own rule
(:func:`eval_assets.metrics.numeric_rules.case_score`: MRA, OSI's zero rule, angular accuracy).
Its mean is the family's **chance**. A reply without a readable number (or a failed call) is
scored as the median would be on that case: it says nothing about the image, as a choice reply
that names no choice has J = 0. So the median guesser and a guesser that never gives a number
(the random baseline's reply to a number question is a sentence) both score exactly the chance;
a model whose numbers are worse than the median scores below it. **score = the mean of the
cases' scores** so defined; all golds equal (the median is exact): left out as uninformative.

**Per recording.** A recording's answer mix is its own, so a family's rates (recall, false
alarms) and its median are taken within each recording and J is their mean weighted by the
recording's cases (each recording's median its own prior): a prior learned per recording (its
majority answer, its median) is exactly at chance on a board pooling recordings too. A recording
whose cases of the family count no gold answer adds its cases to the chance and raw score only.

**Headline** = the unweighted mean of the F family scores (families with at least ``min_n``
cases, :data:`MIN_FAMILY_N`, that are informative); **headline chance** = the mean of their
chances; **CAA** = (headline - chance) / (1 - chance): 0 for every answer prior exactly, in
expectation for a random guess. Families under ``min_n`` are shown but left out
(``FamilyMean.left_out``): each family weighs 1/F whatever its n, and two copies of one random
guesser scored 29.9 % and 20.1 % on the demo before this rule (issue 30). On three synthesized
recordings no test uses (``benchmarks/headline_priors.py``, seeds 4101, 4202, 4303, pooled) the
frequency baseline, a served family-majority prior and a constant guesser all score the chance
(39.8 %, CAA 0.000), the random guesser 41.3 % (CAA +0.026) and blind-smollm2 38.8 %; the mean of
raw family scores had given the served prior 57.8 % against random's 23.8 %.

**Intervals** by linearisation (the delta method): each case's influence on its family's score
(for J, through the recall and false-alarm rate of its gold answer and of each choice it was
offered, class sizes held fixed; for numbers, its score minus the median's on it), then on the
headline (divided by F); the variance is the cluster-robust (CR1) sum over frames of the
influences' sums, G / (G - 1) * sum_g (sum_{i in g} w_i)^2, so the families' shared frames are
in it. A rate over few cases reads too small a variance (1 hit of 8 reads 0.11 / 8), so a choice
family's variance is floored, as Wilson's interval is, at the variance its J would have were the
answers independent of the image at the rates each choice is given where offered (times the
frame design effect): a random guess keeps a chance-sized interval, a family answered all right
keeps a width. An answer prior's score has no variance (it is exact: a constant is given
wherever offered, so the floor is 0 too). The family's interval: score +- z * se clipped to
[0, 1]; None under two frames.
:func:`headline_difference` gives a model's headline minus another's on the cases both
answered, with the same paired, frame-clustered interval (both are scored on the same cases,
and their chances are equal: a chance depends on the labels only).

Raw accuracy and raw MRA stay in each family's ``raw``; the leaderboard keeps the raw pooled
accuracy and SITE's CAA of it beside the headline, labelled as raw. Families without cases are
not counted anywhere. :func:`family_mean` is the older mean of given family scores (intervals
combined as independent), still used where only family scores are at hand.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.chance_adjusted import chance_adjusted_from_rates
from eval_assets.metrics.numeric_rules import case_score
from eval_assets.metrics.stats import MIN_RELIABLE_N, WILSON_Z

__all__ = [
    "HEADLINE_METHOD",
    "MIN_CLASS_N",
    "MIN_FAMILY_N",
    "FamilyMean",
    "FamilyScore",
    "HeadlineCase",
    "HeadlineGap",
    "ScoreKind",
    "family_mean",
    "headline",
    "headline_difference",
    "score_families",
]

# Families with fewer cases are shown but not in the mean: the bound under which the report
# already fades a family's accuracy as an anecdote (its interval spans tens of points).
MIN_FAMILY_N = MIN_RELIABLE_N

ScoreKind = Literal["accuracy", "mra"]

# A gold answer enters a choice family's informedness when it is the gold of this many cases and
# was offered but wrong on this many (see the module docstring).
MIN_CLASS_N = 5

# The design in a few sentences, for the leaderboard's methods and the report (plain text).
HEADLINE_METHOD = (
    "Headline: the unweighted mean over question families of a score no answer prior can "
    "move. A choice family scores chance + (1 - chance) x J, chance = the mean of 1 / number "
    "of choices, J = the mean over its gold answers of recall minus false-alarm rate (the "
    "share of cases where that answer was offered but wrong that were answered with it): any "
    "answer that ignores the image (a constant, the family's most common answer, a random "
    "pick) has J = 0, so it scores the chance exactly or in expectation; for yes/no it is "
    f"balanced accuracy. Gold answers of fewer than {MIN_CLASS_N} cases are not counted. A "
    "numeric family scores its MRA with a reply without a number scored as the family's median "
    "gold number would be; its chance is the median's MRA. Rates and medians are taken per "
    "recording. Families with no counted gold "
    f"answer (e.g. all cases one answer) or fewer than {MIN_FAMILY_N} cases are left out. "
    "CAA = (headline - chance) / (1 - chance), chance the mean of the families' chances. "
    "Intervals: delta method, clustered by frame across families.")


class FamilyScore(BaseModel):
    """One family's score on a case set: the headline's score, its chance level and its raw
    accuracy (choice) or mean relative accuracy (number)."""

    model_config = ConfigDict(frozen=True)

    family: str
    kind: ScoreKind = "accuracy"
    score: float | None = Field(description="None when the family has no case")
    ci_low: float | None = None
    ci_high: float | None = None
    n: int
    chance: float | None = Field(
        default=None, description="what any answer prior scores here (None: not known)")
    raw: float | None = Field(
        default=None, description="raw accuracy (choice) or MRA, an unparseable reply 0")


class FamilyMean(BaseModel):
    """The unweighted mean over families, with its interval and the families it is over."""

    model_config = ConfigDict(frozen=True)

    mean: float
    ci_low: float | None
    ci_high: float | None
    n_families: int
    n_cases: int
    families: list[FamilyScore]
    left_out: list[FamilyScore] = Field(
        default_factory=list, description="families with cases but fewer than min_n: shown "
                                          "beside the mean, not in it")
    min_n: int = Field(default=MIN_FAMILY_N, description="the least cases of a family in the mean")
    chance: float | None = Field(
        default=None, description="the mean of the families' chances: any answer prior's mean")
    caa: float | None = Field(default=None, description="(mean - chance) / (1 - chance)")
    uninformative: list[FamilyScore] = Field(
        default_factory=list, description="families whose cases all have one gold answer: a "
                                          "prior scores them perfectly, so they are left out")


def _half_width(score: FamilyScore) -> float | None:
    """The larger side of the family's interval around its score; None without an interval."""
    if score.ci_low is None or score.ci_high is None or score.score is None:
        return None
    if math.isnan(score.ci_low) or math.isnan(score.ci_high):
        return None
    return max(score.score - score.ci_low, score.ci_high - score.score, 0.0)


def _check_once(names: Sequence[str]) -> None:
    if len(set(names)) != len(names):
        raise ValueError(f"each family must appear once, got {list(names)!r}")


def _chance_of(used: Sequence[FamilyScore], mean: float) -> tuple[float | None, float | None]:
    chances = [s.chance for s in used]
    if not used or any(c is None for c in chances):
        return None, None
    chance = math.fsum(c for c in chances if c is not None) / len(used)
    return chance, chance_adjusted_from_rates(mean, chance)


def family_mean(scores: Sequence[FamilyScore], z: float = WILSON_Z,
                min_n: int = MIN_FAMILY_N) -> FamilyMean | None:
    """The mean over the families of ``scores`` with at least ``min_n`` cases; None when none
    has that many.

    Families with cases but fewer than ``min_n`` are returned in ``left_out``; a family whose
    chance is 1 (one gold answer) in ``uninformative``. The interval is ``mean +- z * se``
    clipped to [0, 1], ``se = sqrt(sum(se_f^2)) / F``, ``se_f`` the larger side of family f's
    interval / z (families treated as independent); None when a family has none. Families keep
    their given order. Raises ``ValueError`` when a family is named twice (it would weigh
    double) or ``min_n`` < 1.
    """
    if min_n < 1:
        raise ValueError(f"min_n must be >= 1 (a family without cases has no score), got {min_n}")
    _check_once([s.family for s in scores])
    scored = [s for s in scores if s.n > 0 and s.score is not None and not math.isnan(s.score)]
    flat = [s for s in scored if s.chance is not None and s.chance >= 1.0]
    scored = [s for s in scored if s not in flat]
    used = [s for s in scored if s.n >= min_n]
    if not used:
        return None
    count = len(used)
    mean = math.fsum(s.score for s in used if s.score is not None) / count
    halves = [_half_width(s) for s in used]
    low = high = None
    if all(h is not None for h in halves):
        se = math.sqrt(math.fsum((h / z) ** 2 for h in halves if h is not None)) / count
        low, high = max(0.0, mean - z * se), min(1.0, mean + z * se)
    chance, caa = _chance_of(used, mean)
    return FamilyMean(mean=mean, ci_low=low, ci_high=high, n_families=count,
                      n_cases=sum(s.n for s in used), families=list(used),
                      left_out=[s for s in scored if s.n < min_n], min_n=min_n,
                      chance=chance, caa=caa, uninformative=flat)


# --- the prior-free headline from per-case answers --------------------------------------------

@dataclass(frozen=True)
class HeadlineCase:
    """One scored case as the headline reads it.

    ``key`` identifies the case across models (pairs them); ``frame`` is its cluster. A choice
    case (``kind`` "accuracy") has its ``gold`` choice, the ``choices`` shown and the choice
    read from the reply (``predicted``; None: a parse failure or failed call). A numeric case
    (``kind`` "mra") has its gold number ``target`` with the parser ``unit``, ``number`` the
    value read from the reply (None: none) and ``score`` its score by the family's rule.
    ``stratum`` is its recording: a family's rates and its median are taken per recording.
    """

    key: Hashable
    family: str
    frame: Hashable
    gold: str
    kind: ScoreKind = "accuracy"
    choices: tuple[str, ...] = ()
    predicted: str | None = None
    target: float | None = None
    unit: str | None = None
    number: float | None = None
    score: float = 0.0
    stratum: Hashable = None


@dataclass(frozen=True)
class _Family:
    """One family's prior-free score, chance, raw score, each case's influence on its score
    (aligned with ``cases``) and the floor of its variance (``floor``: see :func:`_floor`);
    ``score`` None: uninformative."""

    family: str
    kind: ScoreKind
    cases: tuple[HeadlineCase, ...]
    score: float | None
    chance: float | None
    raw: float
    influence: tuple[float, ...]
    floor: float = 0.0

    @property
    def frames(self) -> list[Hashable]:
        return [c.frame for c in self.cases]

    @property
    def extra(self) -> float:
        """What the floor adds to the clustered variance of the score (never below 0)."""
        clustered = _clustered_variance(self.frames, self.influence)
        return 0.0 if clustered is None else max(0.0, self.floor - clustered)


def _by_stratum(cases: Sequence[HeadlineCase]) -> dict[Hashable, list[int]]:
    """The positions of ``cases`` per stratum (recording), strata in first-seen order."""
    out: dict[Hashable, list[int]] = {}
    for i, c in enumerate(cases):
        out.setdefault(c.stratum, []).append(i)
    return out


def _informedness(cases: Sequence[HeadlineCase]
                  ) -> tuple[float, list[float], list[float]] | None:
    """J of one stratum's cases, each case's influence on it and each case's variance were the
    answers independent of the image; None when no gold answer counts (module docstring)."""
    gold_n = Counter(c.gold for c in cases)
    gold_hit = Counter(c.gold for c in cases if c.predicted == c.gold)
    # Cases where c was offered but is not the gold answer, and how many were answered c; and
    # per choice text, how often it is answered where it is offered (the null's rate).
    offered: Counter[str] = Counter()
    alarms: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    given: Counter[str] = Counter()
    for c in cases:
        for choice in set(c.choices):
            shown[choice] += 1
            given[choice] += c.predicted == choice
            if choice != c.gold and choice in gold_n:
                offered[choice] += 1
                alarms[choice] += c.predicted == choice
    classes = sorted(g for g in gold_n
                     if gold_n[g] >= MIN_CLASS_N and offered[g] >= MIN_CLASS_N)
    if not classes:
        return None
    recall = {g: gold_hit[g] / gold_n[g] for g in classes}
    false = {g: alarms[g] / offered[g] for g in classes}
    k = len(classes)
    counted = set(classes)
    influence, null = [], []
    for c in cases:
        # The case's weight on each counted answer's rate: + 1 / N_c on its gold's recall,
        # - 1 / M_c on the false-alarm rate of each other counted answer it offered.
        weights = {}
        if c.gold in counted:
            weights[c.gold] = 1.0 / gold_n[c.gold]
        for choice in set(c.choices):
            if choice != c.gold and choice in counted:
                weights[choice] = -1.0 / offered[choice]
        value = 0.0
        for answer, weight in weights.items():
            rate = recall[answer] if answer == c.gold else false[answer]
            value += weight * (float(c.predicted == answer) - rate)
        influence.append(value / k)
        # Its variance were the answer independent of the image, given at the rates at which
        # each choice is given where offered (the score test's variance, as Wilson's).
        rates = {choice: given[choice] / shown[choice] for choice in set(c.choices)}
        total = math.fsum(rates.values())
        if total > 1.0:
            rates = {key: v / total for key, v in rates.items()}
        mean = math.fsum(w * rates.get(a, 0.0) for a, w in weights.items())
        second = math.fsum(w * w * rates.get(a, 0.0) for a, w in weights.items())
        null.append(max(0.0, second - mean * mean) / (k * k))
    return math.fsum(recall[g] - false[g] for g in classes) / k, influence, null


def _choice_family(family: str, cases: Sequence[HeadlineCase]) -> _Family:
    n = len(cases)
    chance = math.fsum(1.0 / len(c.choices) for c in cases) / n
    raw = sum(1 for c in cases if c.predicted == c.gold) / n
    strata = {s: (idx, _informedness([cases[i] for i in idx]))
              for s, idx in _by_stratum(cases).items()}
    informative = {s: (idx, r) for s, (idx, r) in strata.items() if r is not None}
    if not informative:
        return _Family(family, "accuracy", tuple(cases), None, chance, raw, (0.0,) * n)
    # J: each recording's, weighted by its cases (a recording's answer mix is its own, so a
    # prior learned per recording is 0 in each).
    total = sum(len(idx) for idx, _ in informative.values())
    informedness = 0.0
    influence = [0.0] * n
    null = 0.0
    for idx, (j, values, variances) in informative.values():
        weight = len(idx) / total
        informedness += weight * j
        factor = (1.0 - chance) * weight
        for i, v, var in zip(idx, values, variances, strict=True):
            influence[i] = factor * v
            null += factor * factor * var
    return _Family(family, "accuracy", tuple(cases), chance + (1.0 - chance) * informedness,
                   chance, raw, tuple(influence),
                   _floor([c.frame for c in cases], influence, null))


def _floor(frames: Sequence[Hashable], influence: Sequence[float], null: float) -> float:
    """The floor of a family score's variance: its null variance (answers independent of the
    image, at the rates observed) times the frame design effect of the influences (at least 1).
    A rate over few cases reads a variance near 0 (a recall of 1 of 8 reads 0.11 / 8 where a
    coin would give 0.25 / 8); the floor keeps such a family's interval as wide as chance's."""
    clustered = _clustered_variance(frames, influence)
    plain = math.fsum(u * u for u in influence)
    if clustered is None:
        return 0.0
    return null * (max(1.0, clustered / plain) if plain > 0 else 1.0)


def _numeric_family(family: str, cases: Sequence[HeadlineCase]) -> _Family:
    n = len(cases)
    targets = [c.target if c.target is not None else float(c.gold) for c in cases]
    prior = [0.0] * n
    for idx in _by_stratum(cases).values():  # each recording's own median
        median = float(statistics.median(targets[i] for i in idx))
        for i in idx:
            prior[i] = case_score(median, targets[i], family, cases[i].unit)
    scores = [c.score if c.number is not None else p for c, p in zip(cases, prior, strict=True)]
    chance = math.fsum(prior) / n
    raw = math.fsum(c.score for c in cases) / n
    if chance >= 1.0 - 1e-12:
        return _Family(family, "mra", tuple(cases), None, 1.0, raw, (0.0,) * n)
    score = math.fsum(scores) / n
    lift = score - chance
    influence = tuple(((s - p) - lift) / n for s, p in zip(scores, prior, strict=True))
    return _Family(family, "mra", tuple(cases), score, chance, raw, influence)


def _families(cases: Iterable[HeadlineCase]) -> list[_Family]:
    by_family: dict[str, list[HeadlineCase]] = {}
    for c in cases:
        by_family.setdefault(c.family, []).append(c)
    out = []
    for family, mine in by_family.items():
        kinds = {c.kind for c in mine}
        if len(kinds) != 1:
            raise ValueError(f"family {family!r} mixes choice and numeric cases")
        if kinds == {"mra"}:
            out.append(_numeric_family(family, mine))
            continue
        if any(not c.choices for c in mine):
            # Results scored before rows kept their choices: every gold answer of the family
            # (and the answer given) stands for the choices shown.
            seen = tuple(sorted({c.gold for c in mine}))
            mine = [c if c.choices else replace(c, choices=tuple(sorted(
                {*seen, *([c.predicted] if c.predicted is not None else [])})))
                for c in mine]
        out.append(_choice_family(family, mine))
    return out


def _clustered_variance(frames: Sequence[Hashable], influence: Sequence[float]
                        ) -> float | None:
    """The CR1 variance of a sum of per-case influences clustered by ``frames``; None under two
    clusters."""
    sums: dict[Hashable, float] = {}
    for frame, value in zip(frames, influence, strict=True):
        sums[frame] = sums.get(frame, 0.0) + value
    g = len(sums)
    if g < 2:
        return None
    return g / (g - 1) * math.fsum(v * v for v in sums.values())


def _se(frames: Sequence[Hashable], influence: Sequence[float], extra: float = 0.0
        ) -> float | None:
    """sqrt of the clustered variance plus ``extra``; None under two clusters."""
    variance = _clustered_variance(frames, influence)
    return None if variance is None else math.sqrt(variance + extra)


def _interval(centre: float, se: float | None, z: float, clip: bool = True
              ) -> tuple[float | None, float | None]:
    if se is None:
        return None, None
    low, high = centre - z * se, centre + z * se
    return (max(0.0, low), min(1.0, high)) if clip else (low, high)


def _record(f: _Family, z: float) -> FamilyScore:
    se = None if f.score is None else _se([c.frame for c in f.cases], f.influence, f.extra)
    low, high = _interval(f.score, se, z) if f.score is not None else (None, None)
    return FamilyScore(family=f.family, kind=f.kind, score=f.score, ci_low=low, ci_high=high,
                       n=len(f.cases), chance=f.chance, raw=f.raw)


def score_families(cases: Iterable[HeadlineCase], z: float = WILSON_Z) -> list[FamilyScore]:
    """Each family's prior-free score, chance, raw score and interval, families in first-seen
    order; an uninformative family has score None and chance 1."""
    return [_record(f, z) for f in _families(cases)]


def _used(families: Sequence[_Family], min_n: int) -> list[_Family]:
    return [f for f in families if f.score is not None and len(f.cases) >= min_n]


def headline(cases: Iterable[HeadlineCase], z: float = WILSON_Z,
             min_n: int = MIN_FAMILY_N) -> FamilyMean | None:
    """The prior-free headline of ``cases`` (see the module docstring); None when no family
    is informative and has ``min_n`` cases. Raises ``ValueError`` for a family mixing choice
    and numeric cases, or ``min_n`` < 1."""
    if min_n < 1:
        raise ValueError(f"min_n must be >= 1 (a family without cases has no score), got {min_n}")
    families = _families(cases)
    used = _used(families, min_n)
    if not used:
        return None
    count = len(used)
    mean = math.fsum(f.score for f in used if f.score is not None) / count
    chance = math.fsum(f.chance for f in used if f.chance is not None) / count
    frames = [c.frame for f in used for c in f.cases]
    se = _se(frames, [w / count for f in used for w in f.influence],
             math.fsum(f.extra for f in used) / count ** 2)
    low, high = _interval(mean, se, z)
    records = {f.family: _record(f, z) for f in families}
    return FamilyMean(
        mean=mean, ci_low=low, ci_high=high, n_families=count,
        n_cases=sum(len(f.cases) for f in used), families=[records[f.family] for f in used],
        left_out=[records[f.family] for f in families
                  if f.score is not None and len(f.cases) < min_n],
        min_n=min_n, chance=chance, caa=chance_adjusted_from_rates(mean, chance),
        uninformative=[records[f.family] for f in families if f.score is None])


class HeadlineGap(BaseModel):
    """One headline minus another's on the cases both answered, with a paired interval."""

    model_config = ConfigDict(frozen=True)

    difference: float
    ci_low: float | None
    ci_high: float | None
    n_cases: int
    n_families: int


def headline_difference(a: Iterable[HeadlineCase], b: Iterable[HeadlineCase],
                        z: float = WILSON_Z, min_n: int = MIN_FAMILY_N) -> HeadlineGap | None:
    """Headline of ``a`` minus headline of ``b`` on the cases (by key) both have, families
    chosen on those cases as :func:`headline` does; the 95% interval is the paired,
    frame-clustered delta-method one (the influences' differences). None without a family.
    Raises ``ValueError`` when a shared case has other gold answers in ``a`` and ``b``."""
    mine = {c.key: c for c in a}
    theirs = {c.key: c for c in b}
    shared = [k for k in mine if k in theirs]
    for k in shared:
        if (mine[k].gold, mine[k].family) != (theirs[k].gold, theirs[k].family):
            raise ValueError(f"case {k!r} has another gold answer or family in the two sets")
    fa = {f.family: f for f in _used(_families(mine[k] for k in shared), min_n)}
    fb = {f.family: f for f in _families(theirs[k] for k in shared)}
    if not fa:
        return None
    count = len(fa)
    diff = math.fsum((f.score or 0.0) - (fb[name].score or 0.0) for name, f in fa.items()) / count
    frames: list[Hashable] = []
    influence: list[float] = []
    extra = 0.0
    for name, f in fa.items():
        # Same cases in the same order (both built from ``shared``).
        g = fb[name]
        paired = [wa - wb for wa, wb in zip(f.influence, g.influence, strict=True)]
        frames += f.frames
        influence += [d / count for d in paired]
        # The floor of the difference: both sides' floors, on the share of cases where the two
        # answers differ (where they agree, the difference is 0 whatever the image).
        differ = sum(1 for ca, cb in zip(f.cases, g.cases, strict=True)
                     if ca.predicted != cb.predicted) / len(f.cases)
        clustered = _clustered_variance(f.frames, paired) or 0.0
        extra += max(0.0, (f.floor + g.floor) * differ - clustered)
    low, high = _interval(diff, _se(frames, influence, extra / count ** 2), z, clip=False)
    return HeadlineGap(difference=diff, ci_low=low, ci_high=high,
                       n_cases=sum(len(f.cases) for f in fa.values()), n_families=count)
