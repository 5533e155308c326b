"""The prompt controls' statistics (``../shared/specs/validity.md``): the score per template with
the rank stability of the models between templates, stability under sampling, and parse
failures with and without a JSON schema.

A row is one case a control asked, dimOS's or a spatial (or motion) one. Each answer is scored
by its family's own rule (the scoring layer, :mod:`eval_assets.scoring.prompt_controls`, reads
it): 1 or 0 for a choice (a failed call or a reply that names no choice is 0), the numeric
metric's MRA (OSI-Bench's zero rule where declared) or mean angular accuracy for a number (an
unparseable reply is 0). A group's "accuracy" is the mean of those scores: the share right for
choice families, the mean MRA / angular accuracy for number families, and their mean over cases
for a group that holds both.

- **Templates**: a case's score in each template (``record`` is its own answer in
  ``answers.jsonl``); only cases answered in all three templates are counted, so the templates
  are compared on the same cases. Per model the **min–max** of the three; per report the
  **Kendall τ-b** between the models' leaderboards of each template pair (:func:`kendall_tau`:
  ties handled as scipy's ``kendalltau`` does; None with fewer than two models or when one
  leaderboard is all ties). Both carry their uncertainty (:func:`tau_interval`,
  :func:`spread_noise`): τ a 95% percentile interval over cases resampled with replacement (one
  draw for every model; a replicate where τ is undefined counts 0), and the spread a 95%
  interval by the same bootstrap and the **noise bound**: the 95th percentile of the spread
  when each case's three scores are shuffled among the templates (no template effect at all).
  A spread at or under its noise bound, or a τ interval that holds 0, is indistinguishable
  from noise: with models at chance, τ = ±1 is what two coin flips give. Seeded
  (:data:`NOISE_SEED`, :data:`NOISE_REPLICATES`): the same rows give the same intervals. Above
  :data:`EXACT_MAX_CASES` cases the resampled means are drawn from their normal limit instead
  (the exact draws cost a replicate x case matrix).
- **Repeats** (lmms-eval's stability metrics), over cases with all k repeats recorded:
  **consistency** = the share whose k answers are the same (the same choice, or the same
  parsed number; a parse failure is no answer, so a case with one is inconsistent);
  **expected accuracy** = the mean over cases of its repeats' mean score; **majority-vote
  accuracy** = the mean of the vote's score: a choice case's most frequent choice (a strict
  plurality; a tie is no majority, 0), a number case's median of its parsed values (the
  numeric vote; 0 when none parsed).
- **Structured**: over the cases asked with the schema, the **parse-failure rate** without it
  (the free-text answer) and with it = answered replies that give no answer (no choice, no
  number) / answered replies (a failed call is neither: counted apart), and the score each way.

Empty denominators are None ("n/a"), never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations, permutations

import numpy as np
from pydantic import BaseModel, Field

from eval_assets.prompt_controls import TEMPLATE_NAMES

__all__ = ["RepeatRow", "RepeatStats", "SpreadNoise", "StructuredRow", "StructuredStats",
           "TemplateRow", "TemplateStats", "kendall_tau", "majority_choice", "median",
           "repeat_stats", "spread_noise", "structured_stats", "tau_interval", "tau_pairs",
           "template_stats"]

NOISE_REPLICATES = 1000
NOISE_SEED = 0
_CHUNK = 250  # replicates drawn at once (bounds the memory of a replicate x case matrix)
EXACT_MAX_CASES = 1000  # above it, resampled means are drawn from their normal limit


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of two paired sequences (ties in either corrected for, as
    ``scipy.stats.kendalltau``'s default); None when undefined (fewer than two pairs, or one
    sequence constant)."""
    if len(x) != len(y):
        raise ValueError(f"kendall_tau needs paired sequences; got {len(x)} and {len(y)} values")
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue  # tied in both: in neither tie count of τ-b's denominator terms below
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


# --- templates ------------------------------------------------------------------------------

class TemplateRow(BaseModel):
    """One case in one template: its answer's score by its family's rule, in [0, 1] (None: the
    template's call is missing, the case is then not compared)."""

    case_id: str
    family: str
    recording: str
    template: str
    score: float | None


class TemplateStats(BaseModel):
    """The mean score per template over the cases answered in every template, and its range."""

    n: int = Field(description="cases answered in every template")
    accuracy: dict[str, float | None] = Field(
        description="template -> mean score (accuracy for choices, MRA / angular accuracy for "
                    "numbers)")
    min_accuracy: float | None
    max_accuracy: float | None


def template_stats(rows: Iterable[TemplateRow]) -> TemplateStats:
    """The templates' mean scores over the cases recorded in all of them."""
    by_case: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r.score is not None:
            by_case.setdefault((r.recording, r.case_id), {})[r.template] = r.score
    complete = [c for c in by_case.values() if all(t in c for t in TEMPLATE_NAMES)]
    n = len(complete)
    accuracy = {t: (sum(c[t] for c in complete) / n if n else None) for t in TEMPLATE_NAMES}
    values = [a for a in accuracy.values() if a is not None]
    return TemplateStats(n=n, accuracy=accuracy, min_accuracy=min(values) if values else None,
                         max_accuracy=max(values) if values else None)


def tau_pairs(by_model: dict[str, dict[str, float | None]]
              ) -> list[tuple[str, str, float | None, int]]:
    """For each pair of templates: (template, template, Kendall τ-b of the models' accuracies
    in the two, models compared). Only models with an accuracy in every template count."""
    models = sorted(m for m, acc in by_model.items()
                    if all(acc.get(t) is not None for t in TEMPLATE_NAMES))
    out: list[tuple[str, str, float | None, int]] = []
    for a, b in combinations(TEMPLATE_NAMES, 2):
        xs = [float(by_model[m][a] or 0.0) for m in models]
        ys = [float(by_model[m][b] or 0.0) for m in models]
        out.append((a, b, kendall_tau(xs, ys) if len(models) >= 2 else None, len(models)))
    return out


def _complete_scores(rows: Iterable[TemplateRow]) -> dict[tuple[str, str], list[float]]:
    """(recording, case id) -> its scores in TEMPLATE_NAMES order, cases scored in all three."""
    by_case: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r.score is not None:
            by_case.setdefault((r.recording, r.case_id), {})[r.template] = r.score
    return {k: [c[t] for t in TEMPLATE_NAMES] for k, c in sorted(by_case.items())
            if all(t in c for t in TEMPLATE_NAMES)}


def _draw_counts(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` bootstrap draws of ``n`` cases: how often each case is drawn (size x n)."""
    drawn = rng.integers(n, size=(size, n)) + (np.arange(size) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(float)


def _resampled_means(scores: np.ndarray, mask: np.ndarray, replicates: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Per replicate, the templates' mean scores over cases drawn with replacement: scores
    (cases x models x templates), mask (cases x models) the cases each model answered; the
    result is (replicates x models x templates), NaN where a draw holds none of a model's.
    Above :data:`EXACT_MAX_CASES` cases, each model's means are drawn from the normal
    distribution the bootstrap tends to (its cases' covariance / n; models drawn apart, which
    ignores their shared cases and so widens a difference's spread)."""
    n = scores.shape[0]
    if n > EXACT_MAX_CASES:
        out = np.empty((replicates, *scores.shape[1:]))
        for j in range(scores.shape[1]):
            mine = scores[mask[:, j] > 0, j]
            cov = np.atleast_2d(np.cov(mine.T, bias=True)) / len(mine)
            out[:, j] = rng.multivariate_normal(mine.mean(axis=0), cov, size=replicates)
        return out
    out_chunks = []
    for start in range(0, replicates, _CHUNK):
        size = min(_CHUNK, replicates - start)
        counts = _draw_counts(n, size, rng)
        weight = counts @ mask  # replicates x models
        total = (counts @ (scores * mask[:, :, None]).reshape(n, -1)).reshape(
            size, *scores.shape[1:])
        with np.errstate(invalid="ignore", divide="ignore"):
            out_chunks.append(total / weight[:, :, None])
    return np.concatenate(out_chunks)


def _shuffled_means(complete: np.ndarray, replicates: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Per replicate, the templates' mean scores with each case's scores in a random order of
    the templates (all 3! orders alike): the null of no template effect (replicates x
    templates). Above :data:`EXACT_MAX_CASES` cases, drawn from its normal limit: mean the
    cases' overall mean, covariance sum(s_i^2) / n^2 * 3/2 (I - J/3), s_i^2 the variance of
    case i's scores (a shuffled coordinate varies by s_i^2, two of them covary by -s_i^2/2)."""
    n, k = complete.shape
    if n > EXACT_MAX_CASES:
        spread = complete.var(axis=1).sum() / n ** 2
        cov = spread * k / (k - 1) * (np.eye(k) - np.full((k, k), 1.0 / k))
        return rng.multivariate_normal(np.full(k, complete.mean()), cov, size=replicates)
    orders = np.array(list(permutations(range(k))))
    out = []
    for start in range(0, replicates, _CHUNK):
        size = min(_CHUNK, replicates - start)
        drawn = rng.integers(len(orders), size=(size, n))  # each case's order of the templates
        out.append(sum((drawn == i).astype(float) @ complete[:, order]
                       for i, order in enumerate(orders)) / n)
    return np.concatenate(out)


def tau_interval(by_model: Mapping[str, Sequence[TemplateRow]], a: str, b: str, *,
                 replicates: int = NOISE_REPLICATES, seed: int = NOISE_SEED
                 ) -> tuple[float, float] | None:
    """95% percentile interval of the Kendall τ-b between the models' leaderboards in templates
    ``a`` and ``b``: the cases (recording, case id) resampled with replacement, one draw for
    every model, each model's accuracy recomputed on its own cases in the draw. A replicate
    whose τ is undefined (a tie) counts 0. None with fewer than two models or no case."""
    cases = {m: _complete_scores(rows) for m, rows in by_model.items()}
    models = sorted(m for m, c in cases.items() if c)
    if len(models) < 2:
        return None
    keys = sorted({k for m in models for k in cases[m]})
    index = {k: i for i, k in enumerate(keys)}
    scores = np.zeros((len(keys), len(models), len(TEMPLATE_NAMES)))
    mask = np.zeros((len(keys), len(models)))
    for j, m in enumerate(models):
        for k, values in cases[m].items():
            scores[index[k], j] = values
            mask[index[k], j] = 1.0
    means = _resampled_means(scores, mask, replicates, np.random.default_rng(seed))
    ia, ib = TEMPLATE_NAMES.index(a), TEMPLATE_NAMES.index(b)
    taus = []
    for rep in means:
        if np.isnan(rep).any():
            taus.append(0.0)
            continue
        tau = kendall_tau(list(rep[:, ia]), list(rep[:, ib]))
        taus.append(0.0 if tau is None else tau)
    low, high = np.percentile(taus, [2.5, 97.5])
    return float(low), float(high)


class SpreadNoise(BaseModel):
    """A group's template spread (max - min of the templates' mean scores) with its 95%
    bootstrap interval and the spread that shuffling scores among templates reaches."""

    n: int
    spread: float | None
    ci_low: float | None
    ci_high: float | None
    noise_bound: float | None = Field(
        description="95th percentile of the spread with each case's scores shuffled among the "
                    "templates: a spread at or under it is indistinguishable from noise")

    @property
    def beyond_noise(self) -> bool | None:
        """Whether the spread exceeds its noise bound; None without cases."""
        if self.spread is None or self.noise_bound is None:
            return None
        return self.spread > self.noise_bound + 1e-12


def spread_noise(rows: Iterable[TemplateRow], *, replicates: int = NOISE_REPLICATES,
                 seed: int = NOISE_SEED) -> SpreadNoise:
    """The spread of ``rows``' templates (cases answered in all three) with its uncertainty."""
    complete = np.array(list(_complete_scores(rows).values()), dtype=float)
    n = len(complete)
    if n == 0:
        return SpreadNoise(n=0, spread=None, ci_low=None, ci_high=None, noise_bound=None)
    rng = np.random.default_rng(seed)
    means = complete.mean(axis=0)
    boot = _resampled_means(complete[:, None, :], np.ones((n, 1)), replicates, rng)[:, 0, :]
    spreads = boot.max(axis=1) - boot.min(axis=1)
    low, high = np.percentile(spreads, [2.5, 97.5])
    null = _shuffled_means(complete, replicates, rng)
    bound = float(np.percentile(null.max(axis=1) - null.min(axis=1), 95))
    return SpreadNoise(n=n, spread=float(means.max() - means.min()), ci_low=float(low),
                       ci_high=float(high), noise_bound=bound)


# --- repeats --------------------------------------------------------------------------------

class RepeatRow(BaseModel):
    """One case's k sampled answers (the choice, or the parsed number as text; None: no
    answer), each one's score, and the score of their vote (module docstring)."""

    case_id: str
    family: str
    recording: str
    answers: list[str | None]
    scores: list[float]
    vote_score: float


class RepeatStats(BaseModel):
    """Stability under sampling over a group of cases."""

    n: int = Field(description="cases with all k repeats recorded")
    k: int
    consistency: float | None
    expected_accuracy: float | None
    majority_accuracy: float | None


def majority_choice(choices: Sequence[str | None]) -> str | None:
    """The strict-plurality choice of a case's repeats; None on a tie or without any."""
    counts = Counter(c for c in choices if c is not None).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def median(values: Sequence[float]) -> float | None:
    """The median of a number case's parsed repeats (its vote); None without any."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def repeat_stats(rows: Iterable[RepeatRow], k: int) -> RepeatStats:
    """Consistency, expected and majority-vote accuracy of the rows with all ``k`` repeats."""
    full = [r for r in rows if len(r.answers) == k and len(r.scores) == k]
    n = len(full)
    if not n:
        return RepeatStats(n=0, k=k, consistency=None, expected_accuracy=None,
                           majority_accuracy=None)
    consistent = sum(1 for r in full if r.answers[0] is not None and len(set(r.answers)) == 1)
    expected = math.fsum(math.fsum(r.scores) / k for r in full) / n
    majority = math.fsum(r.vote_score for r in full) / n
    return RepeatStats(n=n, k=k, consistency=consistent / n, expected_accuracy=expected,
                       majority_accuracy=majority)


# --- structured -----------------------------------------------------------------------------

class StructuredRow(BaseModel):
    """One case asked free and with the schema: whether each reply came back (answered), gave
    an answer (parsed: a choice, or a number) and its score by the family's rule."""

    case_id: str
    family: str
    recording: str
    free_answered: bool
    free_parsed: bool
    free_score: float
    schema_answered: bool
    schema_parsed: bool
    schema_score: float


class StructuredStats(BaseModel):
    """Parse failures and scores without and with the schema, over a group of cases."""

    n: int
    free_parse_failure: float | None
    schema_parse_failure: float | None
    free_accuracy: float | None
    schema_accuracy: float | None
    schema_not_answered: int = Field(
        default=0, description="cases whose schema call failed or was refused (an endpoint "
                               "that cannot honour the schema): in no parse-failure rate")


def _rate(numerator: float, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def structured_stats(rows: Iterable[StructuredRow]) -> StructuredStats:
    """The parse-failure rates (over answered replies) and mean scores of a group of rows."""
    rows = list(rows)
    free = [r for r in rows if r.free_answered]
    schema = [r for r in rows if r.schema_answered]
    n = len(rows)
    return StructuredStats(
        n=n, free_parse_failure=_rate(sum(not r.free_parsed for r in free), len(free)),
        schema_parse_failure=_rate(sum(not r.schema_parsed for r in schema), len(schema)),
        free_accuracy=_rate(math.fsum(r.free_score for r in rows), n),
        schema_accuracy=_rate(math.fsum(r.schema_score for r in rows), n),
        schema_not_answered=n - len(schema))
