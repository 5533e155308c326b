"""TimeFlip's and RepeatFrames' extra calls: multi-frame cases asked again with their frames
reversed, or each frame shown twice in a row (:mod:`eval_assets.time_controls`).

A case is asked when its id names a family of :data:`~eval_assets.time_controls.TIME_FAMILIES`
that the control covers and :func:`~eval_assets.time_controls.selected` draws it for the
configured share. The transformed case is asked exactly as a spatial case is
(:mod:`eval_assets.model_runs.spatial`: the same prompt, frames as image parts in the new order,
or their labelled mosaic for an endpoint that takes fewer images), so nothing private is read
or sent. Each call is journalled (``time_flips.journal.jsonl``, ``repeat_frames.journal.jsonl``)
and resumed by the transformed case's content hash, like FlipEval's; ``time_flips.jsonl`` and
``repeat_frames.jsonl`` hold the standing records, in case order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.model_runs.client import VLMClient
from eval_assets.model_runs.scheduling import Gate, ask_each
from eval_assets.model_runs.spatial import SpatialAsk, plan_spatial
from eval_assets.schemas.predictions import (
    RUN_LOCK,
    RUN_REPEAT_FRAMES,
    RUN_REPEAT_FRAMES_JOURNAL,
    RUN_TIME_FLIPS,
    RUN_TIME_FLIPS_JOURNAL,
    TimeControlRecord,
)
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.time_controls import TRANSFORMS, Control, family_of, selected

__all__ = ["CONTROL_FILES", "TimeControlRun", "run_time_control", "time_control_cases",
           "time_control_key"]

# control -> (standing records, journal).
CONTROL_FILES: dict[Control, tuple[str, str]] = {
    "time_flip": (RUN_TIME_FLIPS, RUN_TIME_FLIPS_JOURNAL),
    "repeat_frames": (RUN_REPEAT_FRAMES, RUN_REPEAT_FRAMES_JOURNAL),
}


def time_control_cases(cases: Sequence[SpatialCase], control: Control,
                       share: float = 1.0) -> list[SpatialCase]:
    """The transformed cases ``control`` asks, in case order: those whose family it covers and
    that the share draws."""
    out = []
    for case in cases:
        family = family_of(case.id)
        if family is None or not selected(case.id, control, share):
            continue
        shown = TRANSFORMS[control](case, family)
        if shown is not None:
            out.append(shown)
    return out


def time_control_key(record: TimeControlRecord) -> tuple[str, str, str, str | None]:
    """Resume key of a re-ask: (case_id, model, config_hash, content_sha256 of what was shown)."""
    return (record.case_id, record.model, record.config_hash, record.content_sha256)


@dataclass(frozen=True)
class TimeControlRun:
    """The standing records (case order), the calls made and the calls reused."""

    records: list[TimeControlRecord]
    calls_made: int
    skipped: int


def run_time_control(dataset_dir: Path, client: VLMClient, out_dir: Path,
                     cases: Sequence[SpatialCase], control: Control, *, share: float = 1.0,
                     max_images: int | None = None, max_concurrency: int = 1,
                     ask: bool = True, gate: Gate | None = None) -> TimeControlRun:
    """Ask ``control``'s transformed cases of the spatial ``cases``, resuming what is journalled;
    write its standing-records file (case order).

    ``max_images`` is the endpoint's preflight limit (None: not probed): a transformed case
    with more frames is sent as one labelled mosaic, as a spatial case is. With ``ask`` off
    the standing file of an earlier run is removed (its journal stays), so the file always
    belongs to the current answers, as ``flips.jsonl`` does. ``gate`` (a budget's) lets each
    call start.
    """
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    standing_file, journal_file = CONTROL_FILES[control]
    if not ask:
        (out_dir / standing_file).unlink(missing_ok=True)
        return TimeControlRun([], 0, 0)
    generation = client.generation
    config_hash = generation.config_hash()
    shown = time_control_cases(cases, control, share)
    asks = plan_spatial(dataset_dir, shown, max_images)
    keys = {cid: (cid, generation.model, config_hash, a.content_sha256)
            for cid, a in asks.items()}

    def call(ask_: SpatialAsk) -> TimeControlRecord:
        reply = client.answer_spatial(ask_, ask_.messages(dataset_dir))
        return TimeControlRecord.model_validate({
            **reply.model_dump(exclude={"kind", "content_sha256"}), "control": control,
            "images": ask_.case.images, "choices": ask_.case.choices,
            "content_sha256": ask_.content_sha256})

    with exclusive_run_lock(out_dir / RUN_LOCK), \
            Journal(out_dir / journal_file, TimeControlRecord, time_control_key) as journal:
        pending = [a for cid, a in asks.items() if not journal.succeeded(keys[cid])]
        asked = ask_each(pending, call, journal.append, max_concurrency, gate)
        standing = [r for cid in asks if (r := journal.get(keys[cid])) is not None]
    write_text_atomic(out_dir / standing_file, "".join(r.model_dump_json() + "\n"
                                                       for r in standing))
    return TimeControlRun(standing, asked, len(asks) - len(pending))
