"""The leaderboard and the static HTML report: pure functions over results, no Dagster.

``coverage`` decides which (recording, model) results are usable (not missing, not stale) and
the common case set models are ranked on; ``leaderboard`` pools per-(recording, model) results
on that set and on each model's own cases, and compares models pairwise; ``history`` loads the
kept nightly results and scores each model across nights; ``charts`` draws them; ``overlays``
draws ground truth on frames; ``cards`` builds per-case cards and per-frame overlays; ``html``
renders one self-contained file that opens with ``answer_section`` (best model, margin,
certainty, baselines, what to distrust), its sections grouped by ``nav``
(``ranking_sections``, ``circular_section``,
``nights_section``, ``metric_sections``, which renders each metric's own table data, and
``case_browser``), with ``markup``'s HTML helpers and the ``static/`` stylesheet and script;
``publish`` reads a storage root and writes both (the Dagster assets call it).

Names are imported on first use, so that loading the code location does not load matplotlib:
each Dagster run process starts that much faster.
"""

from __future__ import annotations

from eval_assets.lazy import lazy_exports

_EXPORTS = {
    "build_case_cards": "cards",
    "build_frame_images": "cards",
    "family_chart": "charts",
    "headline_chart": "charts",
    "history_chart": "charts",
    "recording_chart": "charts",
    "Coverage": "coverage",
    "CoverageCell": "coverage",
    "build_coverage": "coverage",
    "NightResult": "history",
    "NightScore": "history",
    "load_history": "history",
    "night_scores": "history",
    "render_report": "html",
    "write_report": "html",
    "ALL_RECORDINGS": "leaderboard",
    "build_leaderboard": "leaderboard",
    "paired_comparisons": "leaderboard",
    "ranking": "leaderboard",
    "write_leaderboard": "leaderboard",
    "render_overlay": "overlays",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
