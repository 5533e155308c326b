"""The run's controls stage, after the answers: FlipEval (:mod:`eval_assets.model_runs.flips`),
TimeFlip and RepeatFrames (:mod:`eval_assets.model_runs.time_controls`) and the prompt controls
(:mod:`eval_assets.model_runs.prompt_controls`), each stage's calls counted by the run's ledger
as its kind and started through the run's budget, like the answers. A control switched on that
cannot be asked (not through the Batch API; structured answers where the preflight found no
schema enforced) is named with why, never dropped in silence (:func:`controls_not_asked`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets.model_runs.budget import Budget
from eval_assets.model_runs.client import VLMClient
from eval_assets.model_runs.concurrency import AdaptiveController
from eval_assets.model_runs.flips import FlipRun, run_flips
from eval_assets.model_runs.ledger import UsageLedger
from eval_assets.model_runs.prompt_controls import (
    PROMPT_FILES,
    PromptControlRun,
    run_prompt_control,
)
from eval_assets.model_runs.scheduling import Gate, PacedGate
from eval_assets.model_runs.time_controls import TimeControlRun, run_time_control
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import Case
from eval_assets.time_controls import CONTROLS, Control

__all__ = ["ControlsStage", "ask_controls", "controls_not_asked"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControlsStage:
    """What every control's calls share: the dataset, the client, the run folder, the ledger
    counting them, the budget whose gate lets them start and the calls in flight."""

    dataset_dir: Path
    client: VLMClient
    out_dir: Path
    ledger: UsageLedger
    budget: Budget | None
    max_concurrency: int
    # The run's adaptive controller (None: a fixed number in flight): it paces the controls'
    # calls as it did the answers, from the limit and rate they taught it.
    controller: AdaptiveController | None = None


def ask_controls(stage: ControlsStage, cases: Sequence[Case], spatial: Sequence[SpatialCase],
                 max_images: int | None, not_asked: Mapping[str, str], *,
                 wanted: Mapping[str, bool], timing: Sequence[Control],
                 time_control_share: float, prompt_control_cases: int, repeats: int,
                 repeat_temperature: float,
                 ) -> tuple[FlipRun, list[TimeControlRun], list[PromptControlRun]]:
    """Ask the controls switched on (``wanted``, ``timing``) that can be asked (not in
    ``not_asked``; those off remove their standing file), each stage's calls counted as its
    kind and started through the budget's gate."""
    d, client, out, n = stage.dataset_dir, stage.client, stage.out_dir, stage.max_concurrency
    gate: Gate | None = stage.budget.gate if stage.budget is not None else None
    if stage.controller is not None:
        gate = PacedGate(stage.controller, gate)
    asked = {name for name, on in wanted.items() if on and name not in not_asked}
    with stage.ledger.phase("flips"):
        flipped = run_flips(d, client, out, cases, n, ask="flips" in asked, gate=gate)
    timed = []
    for control in CONTROLS:
        with stage.ledger.phase(control):
            timed.append(run_time_control(d, client, out, spatial, control,
                                          share=time_control_share, max_images=max_images,
                                          max_concurrency=n, ask=control in timing, gate=gate))
    prompted = []
    for name in PROMPT_FILES:
        with stage.ledger.phase(name):
            prompted.append(run_prompt_control(
                d, client, out, cases, name, per_family=prompt_control_cases, repeats=repeats,
                temperature=repeat_temperature, max_concurrency=n, ask=name in asked,
                spatial=spatial, max_images=max_images, gate=gate))
    return flipped, timed, prompted


def controls_not_asked(where: str, batched: bool, client: VLMClient,
                       **wanted: bool) -> dict[str, str]:
    """The controls switched on (``wanted``, by ``run_model`` keyword) that this run cannot
    ask, each with why (logged as a warning naming ``where``)."""
    enforced = getattr(getattr(client, "capabilities", None), "structured_output",
                       None) == "enforced"
    out = {}
    for switch, on in wanted.items():
        if not on:
            continue
        if batched:
            out[switch] = ("its calls are not sent through the Batch API; run without --batch "
                           "(or a nightly batch model's direct run) to ask them")
        elif switch == "structured" and not enforced:
            out[switch] = ("the preflight found this endpoint does not enforce a JSON schema "
                           "(endpoint.json structured_output); its answers would measure nothing")
    for switch, why in out.items():
        log.warning("%s: %s not asked: %s", where, switch, why)
    return out
