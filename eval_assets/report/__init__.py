"""The leaderboard and the static HTML report: pure functions over results, no Dagster.

``leaderboard`` pools per-(recording, model) results; ``charts`` draws them; ``overlays`` draws
ground truth on frames; ``cards`` builds per-case cards; ``html`` renders one self-contained file.
"""

from eval_assets.report.cards import build_case_cards
from eval_assets.report.charts import family_chart, headline_chart, recording_chart
from eval_assets.report.html import render_report, write_report
from eval_assets.report.leaderboard import ALL_RECORDINGS, build_leaderboard, write_leaderboard
from eval_assets.report.overlays import render_overlay

__all__ = [
    "ALL_RECORDINGS",
    "build_case_cards",
    "build_leaderboard",
    "family_chart",
    "headline_chart",
    "recording_chart",
    "render_overlay",
    "render_report",
    "write_leaderboard",
    "write_report",
]
