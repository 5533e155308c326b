"""The report's "Concurrency" section: how each HTTP model's adaptive limit moved during its run.

Fed from the ``concurrency`` field of each run's ``summary.json`` (:func:`load_concurrency`);
a report without any (local models only, or runs made before adaptive concurrency) shows no
section at all, so its HTML stays what it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from eval_assets.layout import RUN_SUMMARY
from eval_assets.report.markup import NA, esc, section, table
from eval_assets.schemas.concurrency import ConcurrencyHistory
from eval_assets.schemas.predictions import RunSummary

_SHOWN_CHANGES = 12  # the limit's path, first changes then the last ones


def load_concurrency(run_dirs: Iterable[tuple[str, Path]]) -> dict[str, ConcurrencyHistory]:
    """``{label: history}`` of the runs whose ``summary.json`` records one (others skipped)."""
    found: dict[str, ConcurrencyHistory] = {}
    for label, run_dir in run_dirs:
        try:
            summary = RunSummary.model_validate_json(
                (Path(run_dir) / RUN_SUMMARY).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if summary.concurrency is not None:
            found[label] = summary.concurrency
    return found


def _path(history: ConcurrencyHistory) -> str:
    limits = [str(c.limit) for c in history.changes]
    if len(limits) > _SHOWN_CHANGES:
        half = _SHOWN_CHANGES // 2
        limits = [*limits[:half], "…", *limits[-half:]]
    return " → ".join(limits)


def concurrency_section(histories: Mapping[str, ConcurrencyHistory]) -> str:
    """The section's HTML, or "" when no run recorded a history."""
    if not histories:
        return ""
    headers = [("run", False), ("cap", True), ("final", True), ("max", True),
               ("retry episodes", True), ("latency back-offs", True), ("5xx back-offs", True),
               ("paced by headers", False), ("rate-limit stops", True), ("learnt rate", True),
               ("unloaded latency", True), ("limit over the run", False)]
    rows = [[esc(label), str(h.cap), str(h.final_limit), str(h.max_limit),
             str(h.retry_episodes), str(h.latency_backoffs), str(h.error_backoffs),
             "yes" if h.paced_by_headers else "no", str(h.rate_limit_blocks),
             f"{h.learned_rate_per_s:.2f}/s" if h.learned_rate_per_s is not None else NA,
             f"{h.baseline_latency_s:.3f} s" if h.baseline_latency_s is not None else NA,
             esc(_path(h))] for label, h in sorted(histories.items())]
    lead = ("Requests in flight per HTTP model: slow start, ×0.8 per retry episode (429 or no "
            "reply), for 5xx only when their share grew with the limit, and when latency grew "
            "with the limit while fewer in flight answered as much; growth per round otherwise. "
            "Rate-limit headers pace starts when present; a 429 without a hint stops starts "
            "until a probe passes, and the rate learnt then paces them. Resumed answers do not "
            "count.")
    return section("concurrency", "Concurrency", lead, table(headers, rows))
