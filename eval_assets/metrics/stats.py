"""Interval estimates and paired model comparisons for accuracy, with cases clustered by frame.

The ~30 cases of one frame share one image, so they are not independent: a model that misreads a
frame tends to miss several of its questions. Treating them as independent makes intervals too
narrow and tests too eager. Everything here takes a cluster key per case (the frame) and is
deterministic: closed forms, and one bootstrap driven by a counter-based generator (SplitMix64)
that gives the same draws on every platform and numpy version.

Methods (also stated in the leaderboard JSON and the report):

- **Accuracy interval**: Wilson score interval with the case count replaced by the effective
  sample size ``n / deff``. ``deff`` (design effect) is the cluster-robust (CR1) variance of the
  proportion over frames divided by its binomial variance, floored at 1 so clustering never
  narrows an interval. When it cannot be estimated (fewer than 2 frames, or accuracy exactly 0 or
  1, where both variances vanish) ``deff`` is taken as 1 and reported as None.
- **Paired comparison** of two models on their common cases: the exact two-sided McNemar test
  (binomial test of the discordant pairs at p = 0.5; it treats cases as independent), the
  difference in accuracy with a 95% paired cluster-bootstrap percentile interval (frames
  resampled with replacement, both models' answers kept together), and the minimum detectable
  difference (MDD) at alpha = 0.05 two-sided and power 0.8 from Connor's (1987) sample-size
  formula for McNemar's test, using the observed discordance rate and the frame design effect of
  the paired difference. A difference is called significant only when McNemar's p < alpha *and*
  the clustered interval excludes 0.
- **Many comparisons** (:func:`adjust_comparisons`): a table of comparisons (every pair of models,
  overall and per family) is one set of tests; McNemar's p of each is adjusted over the set
  (Holm by default, :mod:`eval_assets.metrics.multitest`) and the adjusted p decides
  ``significant``. The raw p stays beside it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from fractions import Fraction
from statistics import NormalDist

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.multitest import Adjustment, adjust_p

__all__ = [
    "ALPHA",
    "BOOTSTRAP_REPLICATES",
    "BOOTSTRAP_SEED",
    "MIN_RELIABLE_N",
    "POWER",
    "WILSON_Z",
    "ClusteredInterval",
    "PairedComparison",
    "adjust_comparisons",
    "cluster_bootstrap_difference",
    "cluster_sums",
    "clustered_wilson",
    "design_effect",
    "mcnemar_exact_p",
    "minimum_detectable_difference",
    "paired_comparison",
    "wilson_interval",
]

WILSON_Z = 1.959964
ALPHA = 0.05
POWER = 0.8
BOOTSTRAP_REPLICATES = 4000
BOOTSTRAP_SEED = 11
# Below this many cases an accuracy is shown but marked: its interval spans tens of points.
MIN_RELIABLE_N = 20

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_CHUNK_CELLS = 1 << 20  # bootstrap draws per chunk, so memory stays small for many frames


def wilson_interval(correct: float, n: float, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval for ``correct`` successes in ``n`` trials; (0.0, 1.0) when n = 0.

    ``correct`` and ``n`` may be fractional (an effective sample size).
    """
    if n <= 0:
        return 0.0, 1.0
    p = correct / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1.0 - p) / n + z2 / (4 * n * n))) / denom
    # At p = 0 or 1 the bound is exactly 0 or 1; rounding must not leave 0.9999999999999999.
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return low, high


def cluster_sums(keys: Sequence[Hashable], values: Sequence[float]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums of ``values`` and per-cluster case counts, clusters in first-seen order."""
    if len(keys) != len(values):
        raise ValueError(f"keys and values must pair up: got {len(keys)} and {len(values)}")
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64,
                        count=len(keys))
    sums = np.bincount(codes, weights=np.asarray(values, dtype=np.float64),
                       minlength=len(index))
    sizes = np.bincount(codes, minlength=len(index)).astype(np.int64)
    return sums, sizes


def design_effect(sums: np.ndarray, sizes: np.ndarray, variance_per_case: float
                  ) -> float | None:
    """Cluster-robust (CR1) variance of the mean over clusters / its value for independent cases.

    ``sums[c]`` is the total of a per-case quantity in cluster ``c``, ``sizes[c]`` its case count,
    ``variance_per_case`` the quantity's variance under independence (p(1-p) for a proportion).
    None when it cannot be estimated (fewer than 2 clusters, or no variance at all).
    """
    sums = np.asarray(sums, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    m = int(np.count_nonzero(sizes))
    n = float(sizes.sum())
    if m < 2 or n <= 0 or variance_per_case <= 0:
        return None
    mean = float(sums.sum()) / n
    residual = sums - mean * sizes
    robust = m / (m - 1) * math.fsum((residual * residual).tolist()) / (n * n)
    return robust / (variance_per_case / n)


class ClusteredInterval(BaseModel):
    """A proportion with its frame-clustered 95% interval."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    low: float
    high: float
    n: int
    n_clusters: int
    design_effect: float | None = Field(
        description="estimated design effect before flooring at 1; None: not estimable")


def clustered_wilson(keys: Sequence[Hashable], successes: Sequence[bool | int],
                     z: float = WILSON_Z) -> ClusteredInterval | None:
    """Proportion of ``successes`` with a design-effect-adjusted Wilson interval.

    ``keys[i]`` is case ``i``'s cluster (its frame). None when there are no cases.
    """
    sums, sizes = cluster_sums(keys, [1.0 if s else 0.0 for s in successes])
    n = int(sizes.sum())
    if n == 0:
        return None
    correct = float(sums.sum())
    p = correct / n
    deff = design_effect(sums, sizes, p * (1.0 - p))
    n_eff = n / max(1.0, deff if deff is not None else 1.0)
    low, high = wilson_interval(p * n_eff, n_eff, z)
    return ClusteredInterval(estimate=p, low=low, high=high, n=n, n_clusters=len(sizes),
                             design_effect=deff)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: twice the smaller binomial tail of the discordant pairs.

    ``b``: pairs only the first model got right; ``c``: only the second. Computed with exact
    integers, capped at 1; 1.0 when there are no discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(2 * tail, 2**n), Fraction(1)))


def _splitmix64(counter: np.ndarray) -> np.ndarray:
    """SplitMix64 outputs of a uint64 counter array (wrapping arithmetic, platform-independent)."""
    with np.errstate(over="ignore"):
        z = (counter * _GOLDEN + _GOLDEN) & _MASK64
        z = ((z ^ (z >> np.uint64(30))) * _MIX1) & _MASK64
        z = ((z ^ (z >> np.uint64(27))) * _MIX2) & _MASK64
        return z ^ (z >> np.uint64(31))


def _uniform_indices(start: int, count: int, m: int, seed: int) -> np.ndarray:
    """``count`` indices in [0, m) from draws ``start .. start+count-1`` of stream ``seed``."""
    with np.errstate(over="ignore"):
        counter = (np.arange(start, start + count, dtype=np.uint64)
                   + np.uint64((seed * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF))
    # The top 53 bits as a float in [0, 1): exact, so floor(u * m) is the same everywhere.
    u = (_splitmix64(counter) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.minimum((u * m).astype(np.int64), m - 1)


def _quantile(sorted_values: np.ndarray, q: float) -> float:
    """Type-7 (linear) quantile of an already sorted array, written out to stay fixed."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def cluster_bootstrap_difference(
    keys: Sequence[Hashable], differences: Sequence[float], *,
    replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED, level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the mean of per-case ``differences``, resampling whole clusters.

    Each replicate draws as many clusters as there are, with replacement, and takes
    sum of their differences / sum of their case counts. None with fewer than 2 clusters.
    """
    sums, sizes = cluster_sums(keys, differences)
    m = len(sizes)
    if m < 2:
        return None
    if replicates < 100:
        raise ValueError(f"replicates must be >= 100 for a 95% interval, got {replicates}")
    stats = np.empty(replicates, dtype=np.float64)
    rows_per_chunk = max(1, _CHUNK_CELLS // m)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        idx = _uniform_indices(start * m, rows * m, m, seed).reshape(rows, m)
        stats[start:start + rows] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    stats.sort()
    tail = (1.0 - level) / 2
    return _quantile(stats, tail), _quantile(stats, 1.0 - tail)


def minimum_detectable_difference(
    n: float, discordance: float, *, alpha: float = ALPHA, power: float = POWER,
) -> float | None:
    """Smallest true accuracy difference McNemar's test detects with ``power`` over ``n`` pairs.

    Connor (1987): ``n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2`` with discordance rate
    ``psi``. A difference ``d`` needs at least ``d`` discordance, so ``psi`` is
    ``max(discordance, d)``: with no observed discordance this is the most favourable case (every
    discordant pair favours one model), so the result is then a lower bound. ``n`` may be an
    effective (design-effect-adjusted) count. None when no difference up to 1 is detectable.
    """
    if n <= 0:
        return None
    z_a = NormalDist().inv_cdf(1.0 - alpha / 2)
    z_b = NormalDist().inv_cdf(power)

    def detectable(d: float) -> bool:
        psi = max(discordance, d)
        return math.sqrt(n) * d >= z_a * math.sqrt(psi) + z_b * math.sqrt(max(0.0, psi - d * d))

    grid = [i / 10_000 for i in range(1, 10_001)]
    first = next((i for i, d in enumerate(grid) if detectable(d)), None)
    if first is None:
        return None
    lo, hi = (grid[first - 1] if first else 0.0), grid[first]
    for _ in range(40):  # bisect inside the grid step for a stable last digit
        mid = (lo + hi) / 2
        if detectable(mid):
            hi = mid
        else:
            lo = mid
    return hi


class PairedComparison(BaseModel):
    """Two models on the cases both answered (failed calls and parse failures count as wrong)."""

    model_config = ConfigDict(frozen=True)

    model_a: str
    model_b: str
    n_common: int
    n_frames: int
    both_correct: int
    a_only: int = Field(description="discordant: only model_a correct")
    b_only: int = Field(description="discordant: only model_b correct")
    neither: int
    accuracy_a: float | None
    accuracy_b: float | None
    difference: float | None = Field(description="accuracy_a - accuracy_b on the common cases")
    difference_ci_low: float | None
    difference_ci_high: float | None
    mcnemar_p: float = Field(description="exact two-sided McNemar p-value")
    design_effect: float | None = Field(
        description="frame design effect of the paired difference; None: not estimable")
    mdd: float | None = Field(description="minimum detectable difference (alpha 0.05, power 0.8)")
    mdd_discordance: float = Field(description="discordance rate the MDD assumed")
    mdd_discordance_assumed: bool = Field(
        description="True when the observed discordance was below the MDD, so the MDD assumed "
                    "the least discordance such a difference needs (a lower bound)")
    significant: bool = Field(
        description="p < alpha and the interval excludes 0; p is mcnemar_p_adjusted once the "
                    "comparison was adjusted with others, else mcnemar_p")
    better: str | None = Field(description="the significantly better model, if any")
    family: str | None = Field(
        default=None, description="the question family compared; None: all the common cases")
    mcnemar_p_adjusted: float | None = Field(
        default=None, description="McNemar p adjusted for the other comparisons of its table "
                                  "(p_adjustment); None: not adjusted, or not a test (no "
                                  "common case)")
    p_adjustment: Adjustment | None = Field(
        default=None, description="holm or fdr_bh (eval_assets.metrics.multitest); None: raw")
    n_tests: int | None = Field(
        default=None, description="comparisons the p-value was adjusted over")


def paired_comparison(
    model_a: str, model_b: str, keys: Sequence[Hashable], correct_a: Sequence[bool],
    correct_b: Sequence[bool], *, alpha: float = ALPHA, power: float = POWER,
    replicates: int = BOOTSTRAP_REPLICATES, seed: int = BOOTSTRAP_SEED,
    family: str | None = None,
) -> PairedComparison:
    """McNemar, clustered difference interval and MDD for two models on the same cases.

    ``keys[i]`` is the frame of common case ``i``; ``correct_a[i]`` / ``correct_b[i]`` whether
    each model got it right; ``family``: the question family the cases are of (None: all).
    The result is unadjusted; :func:`adjust_comparisons` adjusts a table of them.
    """
    if not len(keys) == len(correct_a) == len(correct_b):
        raise ValueError(f"keys, correct_a and correct_b must have one entry per common case; "
                         f"got {len(keys)}, {len(correct_a)} and {len(correct_b)}")
    a = [bool(x) for x in correct_a]
    b = [bool(x) for x in correct_b]
    n = len(a)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    sums, sizes = cluster_sums(keys, diffs)
    p_value = mcnemar_exact_p(a_only, b_only)
    if n == 0:
        return PairedComparison(
            model_a=model_a, model_b=model_b, n_common=0, n_frames=0, both_correct=0, a_only=0,
            b_only=0, neither=0, accuracy_a=None, accuracy_b=None, difference=None,
            difference_ci_low=None, difference_ci_high=None, mcnemar_p=p_value,
            design_effect=None, mdd=None, mdd_discordance=0.0, mdd_discordance_assumed=True,
            significant=False, better=None, family=family)
    difference = (a_only - b_only) / n
    discordance = (a_only + b_only) / n
    deff = design_effect(sums, sizes, discordance - difference * difference)
    interval = cluster_bootstrap_difference(keys, diffs, replicates=replicates, seed=seed)
    low, high = interval if interval is not None else (None, None)
    mdd = minimum_detectable_difference(n / max(1.0, deff or 1.0), discordance, alpha=alpha,
                                        power=power)
    significant = p_value < alpha and _excludes_zero(low, high)
    better = None
    if significant:
        better = model_a if difference > 0 else model_b
    return PairedComparison(
        model_a=model_a, model_b=model_b, n_common=n, n_frames=len(sizes), both_correct=both,
        a_only=a_only, b_only=b_only, neither=n - both - a_only - b_only,
        accuracy_a=(both + a_only) / n, accuracy_b=(both + b_only) / n, difference=difference,
        difference_ci_low=low, difference_ci_high=high, mcnemar_p=p_value, design_effect=deff,
        mdd=mdd, mdd_discordance=max(discordance, mdd or 0.0),
        mdd_discordance_assumed=mdd is not None and mdd > discordance,
        significant=significant, better=better, family=family)


def _excludes_zero(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


def adjust_comparisons(comparisons: Sequence[PairedComparison], *, method: Adjustment = "holm",
                       alpha: float = ALPHA) -> list[PairedComparison]:
    """``comparisons`` with McNemar's p adjusted over all of them, as one table of tests.

    Each gets ``mcnemar_p_adjusted``, ``p_adjustment`` and ``n_tests``; ``significant`` and
    ``better`` are decided again on the adjusted p (and, as before, on the clustered interval
    excluding 0). A comparison without a common case is no test: it keeps a None adjusted p,
    is not counted in ``n_tests`` and stays not significant. Order is kept.
    """
    tested = [i for i, c in enumerate(comparisons) if c.n_common > 0]
    adjusted = dict(zip(tested, adjust_p([comparisons[i].mcnemar_p for i in tested], method),
                        strict=True))
    out = []
    for i, c in enumerate(comparisons):
        p_adj = adjusted.get(i)
        significant = (p_adj is not None and p_adj < alpha
                       and _excludes_zero(c.difference_ci_low, c.difference_ci_high))
        better = None
        if significant and c.difference is not None:
            better = c.model_a if c.difference > 0 else c.model_b
        out.append(c.model_copy(update={
            "mcnemar_p_adjusted": p_adj, "p_adjustment": method, "n_tests": len(tested),
            "significant": significant, "better": better}))
    return out
