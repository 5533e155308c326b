"""The report's "Cost" section: what each model's calls (and its judge's) cost, per 1,000 cases
and per correct answer.

A cell's model cost is the ``cost`` of its run's ``summary.json`` (every call its run folder's
runs made, counted once where the chat client sent it: ``usage.jsonl``, priced with the model's
``price`` from the models file); a model without a price shows "no price
set", never $0, and so does a judge without one. A model's figures add up its usable cells.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets.layout import AVLM_JUDGE_RESULTS, RUN_SUMMARY, StorageLayout
from eval_assets.report.markup import esc, section, table
from eval_assets.schemas.cost import NO_PRICE
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.judge import JUDGE
from eval_assets.scoring.vqa import report_of

NO_PRICE_HTML = f'<span class="na">{NO_PRICE}</span>'


@dataclass(frozen=True)
class CellCost:
    """One (recording, model) cell: its calls' cost (None: no price set) and its VQA counts."""

    recording: str
    model: str
    model_usd: float | None
    judge_usd: float | None
    cases: int
    correct: int


def run_cost_usd(run_dir: Path) -> float | None:
    """``cost.total_usd`` of a run folder's ``summary.json``; None without a price or a summary."""
    path = Path(run_dir) / RUN_SUMMARY
    if not path.is_file():
        return None
    cost = json.loads(path.read_text(encoding="utf-8")).get("cost")
    return None if cost is None else float(cost["total_usd"])


def cell_costs(results: Sequence[CellScores], run_dirs: dict[tuple[str, str], Path],
               judge_usd: dict[tuple[str, str], float] | None = None) -> list[CellCost]:
    """The cost of each cell from its run folder (``run_dirs`` by (recording, model)) and, when
    the judge has a price, ``judge_usd`` by cell."""
    judge = judge_usd or {}
    out = []
    for r in results:
        key = (r.recording, r.model)
        overall = report_of(r).overall
        run_dir = run_dirs.get(key)
        out.append(CellCost(recording=r.recording, model=r.model,
                            model_usd=run_cost_usd(run_dir) if run_dir is not None else None,
                            judge_usd=judge.get(key), cases=overall.n, correct=overall.correct))
    return out


def judge_costs(layout: StorageLayout, results: Sequence[CellScores],
                ) -> dict[tuple[str, str], float]:
    """The judge's ``cost_usd`` of each cell whose judge has a price (its results summary)."""
    out: dict[tuple[str, str], float] = {}
    for r in results:
        path = layout.metric_dir(JUDGE.name, r.recording, r.model) / AVLM_JUDGE_RESULTS
        if path.is_file():
            cost = json.loads(path.read_text(encoding="utf-8")).get("cost_usd")
            if cost is not None:
                out[(r.recording, r.model)] = float(cost)
    return out


def _total(values: Sequence[float | None]) -> float | None:
    # One unpriced cell makes the model's total unknown: a partial sum would look like a price.
    return None if not values or any(v is None for v in values) else sum(
        v for v in values if v is not None)


def _usd(value: float | None) -> str:
    if value is None:
        return NO_PRICE_HTML
    return esc(f"${value:,.4f}" if value < 100 else f"${value:,.2f}")


def _per(value: float | None, n: int, scale: int = 1) -> str:
    if value is None:
        return NO_PRICE_HTML
    return '<span class="na">n/a</span>' if n == 0 else _usd(value * scale / n)


def cost_section(costs: Sequence[CellCost]) -> str:
    """Per model: model calls, judge calls, together, per 1,000 cases and per correct answer."""
    lead = ("What the calls cost, priced with each model's <code>price</code> in the models file "
            "(USD per million input, output and cached-input tokens) and the token usage the "
            "server reported for every call the run made (answers, descriptions, rotations, "
            "flips, time and prompt controls, repeats, retried failures and the capability "
            "preflight's probes, each counted once as it was sent; Batch API calls at the batch "
            "price): what the server billed. The judge's calls with the judge's price. Per "
            "1,000 cases and per correct answer use the scored cases of the usable cells. A "
            f"model or judge without a price shows “{NO_PRICE}”, never $0.")
    if not costs:
        return section("cost", "Cost", lead, '<p class="empty">No scored cells.</p>')
    rows = []
    for model in sorted({c.model for c in costs}):
        cells = [c for c in costs if c.model == model]
        model_usd = _total([c.model_usd for c in cells])
        judge_usd = _total([c.judge_usd for c in cells])
        both = None if model_usd is None or judge_usd is None else model_usd + judge_usd
        cases, correct = sum(c.cases for c in cells), sum(c.correct for c in cells)
        shown = model_usd if both is None else both
        rows.append([esc(model), _usd(model_usd), _usd(judge_usd), _usd(both),
                     _per(shown, cases, 1000), _per(shown, correct)])
    headers = [("model", False), ("model calls", True), ("judge calls", True),
               ("together", True), ("per 1,000 cases", True), ("per correct answer", True)]
    note = ("<p>Per 1,000 cases and per correct answer count the judge too when it has a "
            "price, else the model's calls alone.</p>")
    return section("cost", "Cost", lead, table(headers, rows) + note)
