"""Report charts rendered with matplotlib's Agg backend into deterministic PNG bytes.

Figures are built with ``matplotlib.figure.Figure`` on an Agg canvas (no pyplot, so no global
backend or figure state), under a fixed style, size and dpi, and saved without the ``Software``
text chunk; Agg writes no timestamp, so the same leaderboard gives byte-identical PNGs.

Accuracy charts draw only the leaderboard's ``common`` rows, the case set models are ranked on;
a model's other cases are never drawn next to another model's. The across-nights chart draws
each model on the cases it answered every night.

A bar over fewer than ``min_n`` cases (default ``MIN_RELIABLE_N``) is drawn faded and hatched
with an "n<20" marker: its interval is too wide for the bar's height to mean much.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from eval_assets.metrics.stats import MIN_RELIABLE_N
from eval_assets.report.history import NightCaseSet, NightScore
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    COMMON,
    family_column,
    leaderboard_families,
)

__all__ = [
    "CHART_DPI",
    "family_chart",
    "headline_chart",
    "history_chart",
    "model_colours",
    "recording_chart",
]

CHART_DPI = 110
_WIDTH_IN = 9.0
# Okabe-Ito: distinguishable for the common colour-vision deficiencies.
_MODEL_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
                  "#000000")
# Typed loosely: matplotlib types rc_context keys as a Literal of every rc name.
_STYLE: dict[Any, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.8,
    "legend.frameon": False,
    "svg.hashsalt": "eval_assets",
    "path.simplify": True,
}


def model_colours(models: Sequence[str]) -> dict[str, str]:
    """A fixed colour per model, by position in the sorted model list (same in every chart)."""
    return {m: _MODEL_COLOURS[i % len(_MODEL_COLOURS)] for i, m in enumerate(sorted(models))}


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=CHART_DPI, metadata={"Software": None})
    return buf.getvalue()


def _common(leaderboard: pd.DataFrame) -> pd.DataFrame:
    return leaderboard[leaderboard["case_set"] == COMMON]


def _pooled(leaderboard: pd.DataFrame) -> pd.DataFrame:
    pooled = _common(leaderboard)
    pooled = pooled[pooled["recording"] == ALL_RECORDINGS]
    if pooled.empty:
        raise ValueError(
            f"the leaderboard has no {ALL_RECORDINGS!r} rows on common cases: no case is common "
            "to every ranked model (or it was not built with build_leaderboard)")
    return pooled


def _errors(acc: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    # matplotlib wants distances from the bar top; NaN intervals draw no error bar.
    return np.nan_to_num(np.vstack([acc - low, high - acc]), nan=0.0).clip(min=0.0)


def _low_n_label(min_n: int) -> str:
    return f"n<{min_n}"


def _low_n_handle(min_n: int) -> Patch:
    return Patch(facecolor="#ffffff", edgecolor="#666666", hatch="///",
                 label=f"{_low_n_label(min_n)}: too few cases to rely on")


def _percent_axis(ax: Axes, axis: str) -> None:
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))


def headline_chart(leaderboard: pd.DataFrame, min_n: int = MIN_RELIABLE_N) -> bytes:
    """Pooled VQA accuracy per ranked model on the common cases (best first) with
    frame-clustered 95% intervals and chance ticks; a model with fewer than ``min_n`` cases is
    faded, hatched and marked."""
    pooled = _pooled(leaderboard).copy()
    pooled["_acc"] = pooled["vqa_accuracy"].fillna(-1.0)
    pooled = pooled.sort_values(["_acc", "model"], ascending=[False, True], kind="stable")
    models = list(pooled["model"])
    colours = model_colours(list(leaderboard["model"].unique()))
    acc = pooled["vqa_accuracy"].to_numpy(dtype=float)
    low = pooled["vqa_ci_low"].to_numpy(dtype=float)
    high = pooled["vqa_ci_high"].to_numpy(dtype=float)
    chance = pooled["chance"].to_numpy(dtype=float)
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(_WIDTH_IN, 1.4 + 0.5 * len(models)))
        ax = fig.add_subplot()
        y = np.arange(len(models))[::-1]
        ns = pooled["n_cases"].to_numpy(dtype=np.int64)
        bars = ax.barh(y, np.nan_to_num(acc), height=0.6, color=[colours[m] for m in models],
                       xerr=_errors(acc, low, high), error_kw={"ecolor": "#333333", "capsize": 4,
                                                               "elinewidth": 1.2})
        for bar, n in zip(bars, ns, strict=True):
            if n < min_n:
                bar.set_alpha(0.35)
                bar.set_hatch("///")
        for yi, c in zip(y, chance, strict=True):
            if not math.isnan(c):
                ax.plot([c, c], [yi - 0.38, yi + 0.38], color="#222222", linestyle="--",
                        linewidth=1.4)
        for yi, a, h, n in zip(y, acc, high, ns, strict=True):
            text = "no cases" if math.isnan(a) else f"{a:.1%}  (n={int(n)})"
            if not math.isnan(a) and n < min_n:
                text += f"  {_low_n_label(min_n)}"
            ax.text((0.0 if math.isnan(h) else h) + 0.01, yi, text, va="center", fontsize=9)
        ax.set_yticks(y, models)
        ax.set_xlim(0, 1.15)
        ax.set_xticks(np.linspace(0, 1, 6))
        _percent_axis(ax, "x")
        ax.grid(axis="y", visible=False)
        n_common = int(ns[0]) if len(ns) else 0
        ax.set_title(f"VQA accuracy on the {n_common:,} common cases "
                     "(95% interval clustered by frame)")
        handles: list[Line2D | Patch] = [
            Line2D([], [], color="#222222", linestyle="--", label="chance level")]
        if (ns < min_n).any():
            handles.append(_low_n_handle(min_n))
        ax.legend(handles=handles, loc="lower right")
        fig.tight_layout()
        return _png(fig)


def _grouped(leaderboard: pd.DataFrame, groups: Sequence[str],
             rows_for: dict[str, dict[str, int]], labels: Sequence[str],
             cols: tuple[str, str, str, str, str], title: str, xlabel: str,
             min_n: int) -> bytes:
    """Bars per group (x) and model (colour) with error bars and per-bar chance markers.

    ``rows_for[model][group]`` is the leaderboard row of that bar (absent: no bar); ``cols`` are
    the accuracy, low, high, chance and n column names, as format strings where ``{g}`` is the
    group. Bars over fewer than ``min_n`` cases are faded, hatched and marked.
    """
    models = sorted(rows_for)
    colours = model_colours(models)
    width = 0.8 / max(1, len(models))
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(_WIDTH_IN, 4.6))
        ax = fig.add_subplot()
        x = np.arange(len(groups))
        any_low = False
        for k, model in enumerate(models):
            offs = x - 0.4 + width * (k + 0.5)
            acc: list[float] = []
            low: list[float] = []
            high: list[float] = []
            chance: list[float] = []
            count: list[float] = []
            for g in groups:
                idx = rows_for[model].get(g)
                for out, col in zip((acc, low, high, chance, count), cols, strict=True):
                    out.append(math.nan if idx is None
                               else float(leaderboard.loc[idx, col.format(g=g)]))
            a, lo, hi, ns = np.array(acc), np.array(low), np.array(high), np.array(count)
            # A model without cases in a group gets no bar at all (not a bar of height 0).
            has = ~np.isnan(a)
            bars = ax.bar(offs[has], a[has], width=width * 0.92, color=colours[model],
                          label=model, yerr=_errors(a[has], lo[has], hi[has]),
                          error_kw={"ecolor": "#333333", "capsize": 2.5, "elinewidth": 1.0})
            for bar, xo, n, top in zip(bars, offs[has], ns[has], np.nan_to_num(hi[has]),
                                       strict=True):
                if n < min_n:
                    any_low = True
                    bar.set_alpha(0.35)
                    bar.set_hatch("///")
                    ax.text(xo, min(1.0, max(top, bar.get_height())) + 0.015,
                            _low_n_label(min_n), ha="center", va="bottom", fontsize=7,
                            rotation=90, color="#444444")
            for xo, c in zip(offs, chance, strict=True):
                if not math.isnan(c):
                    ax.plot([xo - width * 0.46, xo + width * 0.46], [c, c], color="#222222",
                            linestyle="--", linewidth=1.3)
        ax.set_xticks(x, labels, rotation=20 if len(groups) > 3 else 0,
                      ha="right" if len(groups) > 3 else "center")
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_ylim(0, 1.12)
        _percent_axis(ax, "y")
        ax.grid(axis="x", visible=False)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        handles: list[Patch | Line2D] = [Patch(color=colours[m], label=m) for m in models]
        handles.append(Line2D([], [], color="#222222", linestyle="--", label="chance level"))
        if any_low:
            handles.append(_low_n_handle(min_n))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
        fig.tight_layout()
        return _png(fig)


def family_chart(leaderboard: pd.DataFrame, min_n: int = MIN_RELIABLE_N) -> bytes:
    """Accuracy on the common cases per question family and ranked model, with intervals and
    chance level."""
    pooled = _pooled(leaderboard)
    families = leaderboard_families(leaderboard)
    if not families:
        raise ValueError("the leaderboard has no family columns (no VQA cases were scored)")
    rows_for = {
        str(model): {f: idx for f in families if int(pooled.loc[idx, family_column(f, "n")]) > 0}
        for idx, model in zip(pooled.index, pooled["model"], strict=True)
    }
    cols = ("{g}__accuracy", "{g}__ci_low", "{g}__ci_high", "{g}__chance", "{g}__n")
    labels = [f.replace("_", " ") for f in families]
    return _grouped(leaderboard, families, rows_for, labels, cols,
                    "VQA accuracy by question family (common cases)", "question family",
                    min_n)


def recording_chart(leaderboard: pd.DataFrame, min_n: int = MIN_RELIABLE_N) -> bytes:
    """Accuracy on the common cases per recording and ranked model, with intervals and chance
    level."""
    per = _common(leaderboard)
    per = per[per["recording"] != ALL_RECORDINGS]
    if per.empty:
        raise ValueError("the leaderboard has no per-recording rows on common cases")
    recordings = sorted(per["recording"].unique())
    rows_for: dict[str, dict[str, int]] = {}
    for model, group in per.groupby("model", sort=True):
        rows_for[str(model)] = {
            rec: idx for idx, rec, n in zip(group.index, group["recording"], group["n_cases"],
                                            strict=True) if int(n) > 0}
    cols = ("vqa_accuracy", "vqa_ci_low", "vqa_ci_high", "chance", "n_cases")
    return _grouped(leaderboard, recordings, rows_for, recordings, cols,
                    "VQA accuracy by recording (common cases)", "recording", min_n)


def history_chart(scores: Sequence[NightScore],
                  case_set: NightCaseSet = "model_trend") -> bytes:
    """Each model's accuracy per night on ``case_set`` (default: the cases it answered every
    night), a line with frame-clustered 95% error bars; nights in date order on x.

    Raises ``ValueError`` when no score of ``case_set`` has a case.
    """
    have = [s for s in scores if s.case_set == case_set and s.accuracy is not None]
    if not have:
        raise ValueError(f"no night has a case in the {case_set!r} case set")
    nights = sorted({s.night for s in scores})
    models = sorted({s.model for s in have})
    colours = model_colours(sorted({s.model for s in scores}))
    x_of = {night: i for i, night in enumerate(nights)}
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(_WIDTH_IN, 4.2))
        ax = fig.add_subplot()
        for k, model in enumerate(models):
            mine = sorted((s for s in have if s.model == model), key=lambda s: s.night)
            # A small per-model offset keeps overlapping error bars apart.
            x = np.array([x_of[s.night] for s in mine], dtype=float) + 0.06 * (
                k - (len(models) - 1) / 2)
            acc = np.array([s.accuracy for s in mine], dtype=float)
            low = np.array([np.nan if s.ci_low is None else s.ci_low for s in mine])
            high = np.array([np.nan if s.ci_high is None else s.ci_high for s in mine])
            ax.errorbar(x, acc, yerr=_errors(acc, low, high), color=colours[model],
                        marker="o", markersize=5, linewidth=1.6, capsize=3, elinewidth=1.0,
                        label=f"{model} ({mine[0].n:,} cases)")
        ax.set_xticks(np.arange(len(nights)), nights, rotation=30 if len(nights) > 6 else 0,
                      ha="right" if len(nights) > 6 else "center")
        ax.set_xlim(-0.5, len(nights) - 0.5)
        ax.set_ylim(0, 1.05)
        _percent_axis(ax, "y")
        ax.set_title("VQA accuracy across nights (each model on the cases it answered every "
                     "night)" if case_set == "model_trend" else f"VQA accuracy across nights "
                     f"({case_set.replace('_', ' ')})")
        ax.set_xlabel("night")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
        fig.tight_layout()
        return _png(fig)
