"""The leaderboard and the static HTML report: pure functions over results, no Dagster.

``coverage`` decides which (recording, model) results are usable (not missing, not stale) and
the common case set models are ranked on; ``leaderboard`` pools per-(recording, model) results
on that set and on each model's own cases, and compares models pairwise; ``history`` loads the
kept nightly results and scores each model across nights; ``charts`` draws them; ``overlays``
draws ground truth on frames; ``cards`` builds per-case cards and per-frame overlays; ``html``
renders one self-contained file; ``publish`` reads a storage root and writes both (the Dagster
assets call it).
"""

from eval_assets.report.cards import build_case_cards, build_frame_images
from eval_assets.report.charts import (
    family_chart,
    headline_chart,
    history_chart,
    recording_chart,
)
from eval_assets.report.coverage import Coverage, CoverageCell, build_coverage
from eval_assets.report.history import NightResult, NightScore, load_history, night_scores
from eval_assets.report.html import render_report, write_report
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    build_leaderboard,
    paired_comparisons,
    ranking,
    write_leaderboard,
)
from eval_assets.report.overlays import render_overlay

__all__ = [
    "ALL_RECORDINGS",
    "Coverage",
    "CoverageCell",
    "NightResult",
    "NightScore",
    "build_case_cards",
    "build_coverage",
    "build_frame_images",
    "build_leaderboard",
    "family_chart",
    "headline_chart",
    "history_chart",
    "load_history",
    "night_scores",
    "paired_comparisons",
    "ranking",
    "recording_chart",
    "render_overlay",
    "render_report",
    "write_leaderboard",
    "write_report",
]
