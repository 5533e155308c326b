"""The "Endpoints" section: per model, what its endpoint could do and what its replies came to.

Read from each run folder: ``endpoint.json`` (the capability preflight,
:mod:`eval_assets.model_runs.preflight`) and ``summary.json`` (``answers.outcomes``: answered,
truncated, refused, empty, server_error, ...). A model whose runs hold neither is left out; with
no model at all the section is not shown.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval_assets.layout import RUN_ENDPOINT, RUN_SUMMARY
from eval_assets.report.markup import esc, section
from eval_assets.schemas.endpoint import EndpointCapabilities


@dataclass(frozen=True)
class ModelEndpoint:
    """One model's preflight record (its latest run's) and its answers' outcomes, all runs."""

    model: str
    capabilities: EndpointCapabilities | None
    outcomes: dict[str, int] = field(default_factory=dict)


def load_endpoints(runs: Sequence[tuple[str, Path]]) -> list[ModelEndpoint]:
    """``(model, run folder)`` pairs read into one entry per model (outcomes summed)."""
    found: dict[str, tuple[EndpointCapabilities | None, Counter[str]]] = {}
    for model, run_dir in runs:
        capabilities, outcomes = found.get(model, (None, Counter()))
        path = Path(run_dir) / RUN_ENDPOINT
        if path.is_file():
            capabilities = EndpointCapabilities.model_validate_json(path.read_text("utf-8"))
        summary = Path(run_dir) / RUN_SUMMARY
        if summary.is_file():
            counts = json.loads(summary.read_text("utf-8")).get("answers", {}).get("outcomes")
            outcomes.update(counts or {})
        found[model] = (capabilities, outcomes)
    return [ModelEndpoint(m, c, dict(sorted(o.items())))
            for m, (c, o) in sorted(found.items()) if c is not None or o]


def _capabilities_cells(c: EndpointCapabilities | None) -> str:
    if c is None:
        return '<td colspan="6" class="empty">no preflight record</td>'
    images = f"{c.max_images}{'+' if c.max_images >= c.max_images_probed else ''}"
    cells = (c.token_limit_param, images, c.structured_output, c.reasoning,
             "yes" if c.logprobs else "no", f"{c.calls} calls, {c.seconds:.1f} s")
    return "".join(f"<td>{esc(v)}</td>" for v in cells)


def endpoints_section(endpoints: Sequence[ModelEndpoint]) -> str:
    """The section's HTML ('' when no run recorded a preflight or outcomes)."""
    if not endpoints:
        return ""
    kinds = sorted({k for e in endpoints for k in e.outcomes},
                   key=lambda k: (k != "answered", k))
    head = "".join(f"<th>{esc(h)}</th>" for h in (
        "model", "token limit", "images / request", "structured output", "reasoning",
        "logprobs", "preflight cost", *kinds))
    rows = "".join(
        f"<tr><td>{esc(e.model)}</td>{_capabilities_cells(e.capabilities)}"
        + "".join(f"<td>{e.outcomes.get(k, 0):,}</td>" for k in kinds) + "</tr>"
        for e in endpoints)
    lead = ("What each model's endpoint could do (probed before its run asked anything) and what "
            "its answers came to. Truncated and refused replies are answers and score as wrong; "
            "empty replies and server errors are not answers: their cases stay incomplete and a "
            "rerun asks them again.")
    return section("endpoints", "Endpoints and reply outcomes", esc(lead),
                   f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
