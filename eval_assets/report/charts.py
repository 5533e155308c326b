"""Report charts rendered with matplotlib's Agg backend into deterministic PNG bytes.

Figures are built with ``matplotlib.figure.Figure`` on an Agg canvas (no pyplot, so no global
backend or figure state), under a fixed style, size and dpi, and saved without the ``Software``
text chunk; Agg writes no timestamp, so the same leaderboard gives byte-identical PNGs.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    family_column,
    leaderboard_families,
)

__all__ = [
    "CHART_DPI",
    "family_chart",
    "headline_chart",
    "model_colours",
    "recording_chart",
]

CHART_DPI = 110
_WIDTH_IN = 9.0
# Okabe-Ito: distinguishable for the common colour-vision deficiencies.
_MODEL_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
                  "#000000")
_STYLE = {
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


def _pooled(leaderboard: pd.DataFrame) -> pd.DataFrame:
    pooled = leaderboard[leaderboard["recording"] == ALL_RECORDINGS]
    if pooled.empty:
        raise ValueError(
            f"the leaderboard has no {ALL_RECORDINGS!r} rows; build it with build_leaderboard")
    return pooled


def _errors(acc: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    # matplotlib wants distances from the bar top; NaN intervals draw no error bar.
    return np.nan_to_num(np.vstack([acc - low, high - acc]), nan=0.0).clip(min=0.0)


def _percent_axis(ax: Axes, axis: str) -> None:
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))


def headline_chart(leaderboard: pd.DataFrame) -> bytes:
    """Pooled VQA accuracy per model (best first) with 95% Wilson intervals and chance ticks."""
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
        ax.barh(y, np.nan_to_num(acc), height=0.6, color=[colours[m] for m in models],
                xerr=_errors(acc, low, high), error_kw={"ecolor": "#333333", "capsize": 4,
                                                        "elinewidth": 1.2})
        for yi, c in zip(y, chance, strict=True):
            if not math.isnan(c):
                ax.plot([c, c], [yi - 0.38, yi + 0.38], color="#222222", linestyle="--",
                        linewidth=1.4)
        for yi, a, h, n in zip(y, acc, high, pooled["n_cases"], strict=True):
            text = "no cases" if math.isnan(a) else f"{a:.1%}  (n={int(n)})"
            ax.text((0.0 if math.isnan(h) else h) + 0.01, yi, text, va="center", fontsize=9)
        ax.set_yticks(y, models)
        ax.set_xlim(0, 1.15)
        ax.set_xticks(np.linspace(0, 1, 6))
        _percent_axis(ax, "x")
        ax.grid(axis="y", visible=False)
        ax.set_title("VQA accuracy, all recordings (95% Wilson interval)")
        ax.legend(handles=[Line2D([], [], color="#222222", linestyle="--", label="chance level")],
                  loc="lower right")
        fig.tight_layout()
        return _png(fig)


def _grouped(leaderboard: pd.DataFrame, groups: Sequence[str],
             rows_for: dict[str, dict[str, int]], labels: Sequence[str],
             cols: tuple[str, str, str, str], title: str, xlabel: str) -> bytes:
    """Bars per group (x) and model (colour) with error bars and per-bar chance markers.

    ``rows_for[model][group]`` is the leaderboard row of that bar (absent: no bar); ``cols`` are
    the accuracy, low, high and chance column names, as format strings where ``{g}`` is the group.
    """
    models = sorted(rows_for)
    colours = model_colours(models)
    width = 0.8 / max(1, len(models))
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(_WIDTH_IN, 4.6))
        ax = fig.add_subplot()
        x = np.arange(len(groups))
        for k, model in enumerate(models):
            offs = x - 0.4 + width * (k + 0.5)
            acc, low, high, chance = [], [], [], []
            for g in groups:
                idx = rows_for[model].get(g)
                for out, col in zip((acc, low, high, chance), cols, strict=True):
                    out.append(math.nan if idx is None
                               else float(leaderboard.loc[idx, col.format(g=g)]))
            a, lo, hi = np.array(acc), np.array(low), np.array(high)
            # A model without cases in a group gets no bar at all (not a bar of height 0).
            has = ~np.isnan(a)
            ax.bar(offs[has], a[has], width=width * 0.92, color=colours[model], label=model,
                   yerr=_errors(a[has], lo[has], hi[has]),
                   error_kw={"ecolor": "#333333", "capsize": 2.5, "elinewidth": 1.0})
            for xo, c in zip(offs, chance, strict=True):
                if not math.isnan(c):
                    ax.plot([xo - width * 0.46, xo + width * 0.46], [c, c], color="#222222",
                            linestyle="--", linewidth=1.3)
        ax.set_xticks(x, labels, rotation=20 if len(groups) > 3 else 0,
                      ha="right" if len(groups) > 3 else "center")
        ax.set_xlim(-0.5, len(groups) - 0.5)
        ax.set_ylim(0, 1.05)
        _percent_axis(ax, "y")
        ax.grid(axis="x", visible=False)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        handles = [Patch(color=colours[m], label=m) for m in models]
        handles.append(Line2D([], [], color="#222222", linestyle="--", label="chance level"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
        fig.tight_layout()
        return _png(fig)


def family_chart(leaderboard: pd.DataFrame) -> bytes:
    """Pooled accuracy per question family and model, with intervals and chance level."""
    pooled = _pooled(leaderboard)
    families = leaderboard_families(leaderboard)
    if not families:
        raise ValueError("the leaderboard has no family columns (no VQA cases were scored)")
    rows_for = {
        str(model): {f: idx for f in families if int(pooled.loc[idx, family_column(f, "n")]) > 0}
        for idx, model in zip(pooled.index, pooled["model"], strict=True)
    }
    cols = ("{g}__accuracy", "{g}__ci_low", "{g}__ci_high", "{g}__chance")
    labels = [f.replace("_", " ") for f in families]
    return _grouped(leaderboard, families, rows_for, labels, cols,
                    "VQA accuracy by question family (all recordings)", "question family")


def recording_chart(leaderboard: pd.DataFrame) -> bytes:
    """Accuracy per recording and model, with intervals and chance level."""
    per = leaderboard[leaderboard["recording"] != ALL_RECORDINGS]
    if per.empty:
        raise ValueError("the leaderboard has no per-recording rows")
    recordings = sorted(per["recording"].unique())
    rows_for: dict[str, dict[str, int]] = {}
    for model, group in per.groupby("model", sort=True):
        rows_for[str(model)] = {
            rec: idx for idx, rec, n in zip(group.index, group["recording"], group["n_cases"],
                                            strict=True) if int(n) > 0}
    cols = ("vqa_accuracy", "vqa_ci_low", "vqa_ci_high", "chance")
    return _grouped(leaderboard, recordings, rows_for, recordings, cols,
                    "VQA accuracy by recording", "recording")
