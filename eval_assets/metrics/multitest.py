"""Adjusted p-values for many tests at once: Holm (family-wise) and Benjamini-Hochberg (FDR).

A report with a dozen families, every pair of models and every recording tests hundreds of
hypotheses; at alpha 0.05 some come out "significant" by chance alone. The report decides on
adjusted p-values, and shows the raw ones beside them:

- **Holm** (step-down, controls the family-wise error rate): for the comparison table of one
  report (every pair of models, overall and per family). With the p-values sorted ascending,
  ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) p(j))``.
- **Benjamini-Hochberg** (step-up, controls the false discovery rate): for the nightly drift
  flags (families x recordings x models of one night), where a reader wants the changes worth a
  look rather than a guarantee of none by chance. ``p_adj(i) = min_{j >= i} min(1, m p(j) / j)``.

Both give the same adjusted p-values as ``statsmodels.stats.multitest.multipletests`` with
``method="holm"`` and ``method="fdr_bh"`` (checked in the tests to 1e-12); they are written out
here so the core needs no statsmodels and the arithmetic stays fixed. Tied p-values get the same
adjusted value whatever their order. Results keep the input order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["ADJUSTMENTS", "Adjustment", "adjust_p", "benjamini_hochberg", "holm"]

Adjustment = Literal["holm", "fdr_bh"]
# What each adjustment is called in the JSON and the report.
ADJUSTMENTS: dict[Adjustment, str] = {
    "holm": "Holm step-down (family-wise error rate)",
    "fdr_bh": "Benjamini-Hochberg step-up (false discovery rate)",
}


def _checked(p_values: Sequence[float]) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p-values must be a flat sequence, got shape {p.shape}")
    bad = [float(x) for x in p if math.isnan(x) or x < 0.0 or x > 1.0]
    if bad:
        raise ValueError(f"p-values must lie in [0, 1]; got {bad[:5]!r}: a test without a "
                         "p-value must be left out of the adjustment, not passed as NaN")
    return p


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of ``p_values`` (input order); [] for no test."""
    p = _checked(p_values)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * np.arange(m, 0, -1, dtype=np.float64))
    out = np.empty(m, dtype=np.float64)
    out[order] = np.minimum(stepped, 1.0)
    return [float(x) for x in out]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values) of ``p_values`` (input order)."""
    p = _checked(p_values)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    # p(i) / (i / m), as statsmodels divides by the ECDF factor, so the last bits agree.
    raw = p[order] / (np.arange(1, m + 1, dtype=np.float64) / m)
    stepped = np.minimum.accumulate(raw[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = np.minimum(stepped, 1.0)
    return [float(x) for x in out]


def adjust_p(p_values: Sequence[float], method: Adjustment) -> list[float]:
    """``holm`` or ``benjamini_hochberg`` of ``p_values``, by ``method`` (``ADJUSTMENTS``)."""
    if method == "holm":
        return holm(p_values)
    if method == "fdr_bh":
        return benjamini_hochberg(p_values)
    raise ValueError(f"unknown p-value adjustment {method!r}; use one of {sorted(ADJUSTMENTS)}")
