"""TimeFlip and RepeatFrames (:mod:`eval_assets.time_controls`): each multi-frame case of their
families re-asked with its frames reversed (gold: the family's transform) or each frame shown
twice (gold unchanged); consistency = right both ways, agreement (TimeFlip) and the share of
answers changed (RepeatFrames).

Measured only when the run asked the variants (``time_flips.jsonl`` / ``repeat_frames.jsonl``
in its folder: :mod:`eval_assets.model_runs.time_controls`); otherwise, or when the dataset has
no case of the control's families, the result is a not-measured record. The leaderboard pools
each per case over a row's cells; the report shows them per model and family.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.time_controls import (
    TimeCase,
    TimeGroupStats,
    TimeReport,
    TimeRow,
    time_eval,
    time_group_stats,
)
from eval_assets.model_runs.time_controls import CONTROL_FILES
from eval_assets.schemas.predictions import TimeControlRecord
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Cell,
    Column,
    Int,
    Join,
    MetricSpec,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    markdown_number,
)
from eval_assets.time_controls import TRANSFORMS, Control, time_families, transform_of

NOT_ASKED = {"time_flip": "no reversed cases asked", "repeat_frames": "no repeated cases asked"}
NO_CASES = {"time_flip": "no multi-frame cases of a TimeFlip family",
            "repeat_frames": "no multi-frame cases of a RepeatFrames family"}
ALL = "all families"


def load_time_records(run_dir: Path, control: Control) -> dict[str, TimeControlRecord] | None:
    """The standing re-asks of ``control`` in a run folder by case id; None when none were
    asked."""
    path = Path(run_dir) / CONTROL_FILES[control][0]
    if not path.is_file():
        return None
    return {r.case_id: r for r in read_jsonl(path, TimeControlRecord)}


def time_cases(data: PrivateDataset, run: ModelRun, records: dict[str, TimeControlRecord],
               recording: str, control: Control) -> list[TimeCase]:
    """One case per spatial label of a family ``control`` covers, showing several frames. A
    record that showed other frames or choices than the current case's variant (a dataset
    changed since the run) was not asked."""
    public = data.spatial_cases
    cases = []
    for label in data.spatial_labels:
        transform = transform_of(label.family, control)
        case = public.get(label.id)
        if transform is None or case is None:
            continue
        variant = TRANSFORMS[control](case, label.family)
        if variant is None:
            continue
        record = records.get(label.id)
        asked = (record is not None and record.images == variant.images
                 and record.choices == variant.choices)
        answer = run.answers.get(label.id)
        frames = label.frame_indices or [label.frame_index or 0]
        cases.append(TimeCase(
            case_id=label.id, family=label.family, recording=recording, frame_index=frames[0],
            kind=time_families()[label.family].answer, choices=case.choices, answer=label.answer,
            reply=answer.raw_response if answer and answer.status == "success" else None,
            variant_asked=asked, variant_choices=variant.choices,
            variant_answer=transform(label.answer),
            variant_reply=(record.raw_response if asked and record is not None
                           and record.status == "success" else None)))
    return cases


def score_time_control(data: PrivateDataset, run: ModelRun,
                       records: dict[str, TimeControlRecord] | None, recording: str,
                       control: Control) -> TimeReport | NotMeasured:
    """``control`` of a cell; not measured without its re-asks or cases of its families."""
    if records is None:
        return NotMeasured(reason=NOT_ASKED[control])
    cases = time_cases(data, run, records, recording, control)
    if not cases:
        return NotMeasured(reason=NO_CASES[control])
    return time_eval(cases, control)


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _interval(s: TimeGroupStats) -> Cell:
    if s.consistency is None:
        return Pct(None)
    return Join((Pct(s.consistency), Text(" "),
                 Text(f"[{markdown_number(s.ci_low)}, {markdown_number(s.ci_high)}]", "ci")))


def _rows_by_model(spec: MetricSpec[TimeReport],
                   cells: Sequence[CellScores]) -> dict[str, list[TimeRow]]:
    out: dict[str, list[TimeRow]] = {}
    for cell, report in spec.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        out.setdefault(cell.model, []).extend(report.rows)
    return out


def _groups(rows: list[TimeRow]) -> list[tuple[str, TimeGroupStats]]:
    families = sorted({r.family for r in rows})
    return [(ALL, time_group_stats(rows)),
            *((f, time_group_stats([r for r in rows if r.family == f])) for f in families)]


def _table(spec: MetricSpec[TimeReport], anchor: str, title: str, lead: str, variant: str,
           last: tuple[str, Callable[[TimeGroupStats], Cell]],
           cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple(
        (Text(model, "model"), Text(family, "b" if family == ALL else None),
         Join((Int(s.n), Text(" "), Text(f"({s.not_asked} not asked)", "ci"))),
         _interval(s), Pct(s.original_accuracy), Pct(s.variant_accuracy), Int(s.n_compared),
         last[1](s))
        for model, model_rows in _rows_by_model(spec, cells).items()
        for family, s in _groups(model_rows))
    return ReportTable(
        anchor=anchor, title=title, lead=lead, rows=rows,
        empty=f"Not measured: no run asked the {variant} cases (the vlm resource's switch is "
              "off, the run had a budget or went through the Batch API), or the datasets have "
              "no multi-frame case of these families.",
        headers=(("Model", False), ("Family", False), ("Cases", True),
                 ("Right both ways [95% CI]", True), ("Original", True),
                 (variant.capitalize(), True), ("Both parsed", True), (last[0], True)))


# --- TimeFlip -------------------------------------------------------------------------------

def _flip_score(inputs: ScoringInputs) -> TimeReport | NotMeasured:
    return score_time_control(inputs.data, inputs.run,
                              load_time_records(inputs.run_dir, "time_flip"), inputs.recording,
                              "time_flip")


def _flip_metadata(report: TimeReport) -> dict[str, Any]:
    o = report.overall
    return {"time_flip_consistency": o.consistency, "time_flip_n": o.n,
            "time_flip_not_asked": o.not_asked, "time_flip_agreement": o.agreement}


def _flip_pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """TimeFlip of every case of the cells, pooled per case; null when none was measured."""
    rows = [row for _, report in TIME_FLIP.results(cells) for row in report.rows]
    if not rows:
        return {}
    s = time_group_stats(rows)
    return {"time_flip_consistency": _nan(s.consistency), "time_flip_ci_low": _nan(s.ci_low),
            "time_flip_ci_high": _nan(s.ci_high), "time_flip_n": s.n,
            "time_flip_not_asked": s.not_asked,
            "time_flip_original_accuracy": _nan(s.original_accuracy),
            "time_flip_reversed_accuracy": _nan(s.variant_accuracy),
            "time_flip_agreement": _nan(s.agreement)}


RIGHT_RULE = ("right: a choice names the gold; a count or distance has MRA >= 0.5 (relative "
              "error <= 0.30; a distance truth below 0.30 m by OSI-Bench's tau rule); an angle "
              "is within 30 degrees (mean angular accuracy >= 0.5); a failed call or "
              "unparseable reply is wrong")
FLIP_LEAD = (
    "Each multi-frame case of a family whose truth reverses cleanly is also asked with its "
    "frames in reverse order, under the same words (still \u201cin time order\u201d); its gold "
    "is the original one transformed: turn direction swaps left and right, route sequence "
    "reverses its moves and swaps left and right, distances, the turn angle, same place and "
    "the cross-frame count keep theirs. Egocentric direction, appearance order and relative "
    "direction are not asked reversed. <b>Right both ways</b>: the share of cases answered "
    "right as shown and reversed (a count or distance is right at MRA \u2265 0.5, an angle "
    "within 30\u00b0). <b>Agreement</b>: of the cases where both replies parsed, the share "
    "whose reversed answer is the original one transformed (numbers: right against the "
    "original number). A model that answers from the wording, not the frames, is caught here.")
TIME_FLIP_METHODS = (
    ("time_flip",
     "each multi-frame case of a TimeFlip family (eval_assets.time_controls.TIME_FAMILIES) is "
     "also asked with its frames reversed, same question; its gold is the family's transform "
     "of the gold (turn_direction: left<->right; route_sequence: moves reversed, left<->right; "
     "distances, turn_angle_deg, same_place, object_count_across_frames: unchanged). "
     "time_flip_n counts the cases asked both ways, time_flip_not_asked those whose reversed "
     "case was not asked (a share was configured, or the run skipped it). "
     "time_flip_consistency = cases right both ways / time_flip_n (" + RIGHT_RULE + "), with "
     "the frame-clustered 95% interval; time_flip_original_accuracy / "
     "time_flip_reversed_accuracy: each side alone; time_flip_agreement: share of the cases "
     "where both replies parsed whose reversed answer is the transformed original answer (a "
     "number: right against the original number). Pooled per case over a row's cells; null "
     "in 'common' rows"),
)
_FLIP_COUNTS = {"time_flip_n", "time_flip_not_asked"}
TIME_FLIP: MetricSpec[TimeReport] = MetricSpec(
    name="time_flip", description=__doc__ or "", file="time_flip.json", version="2",
    # Scored against the spatial labels, which label overrides never touch (as spatial_accuracy):
    # an override is no input of it.
    result_model=TimeReport, score=_flip_score,
    metadata=_flip_metadata, methods=TIME_FLIP_METHODS, pool=_flip_pool, label="TimeFlip",
    columns=tuple(Column(c, integer=c in _FLIP_COUNTS) for c in (
        "time_flip_consistency", "time_flip_ci_low", "time_flip_ci_high", "time_flip_n",
        "time_flip_not_asked", "time_flip_original_accuracy", "time_flip_reversed_accuracy",
        "time_flip_agreement")),
    section=Section("time-flip", "TimeFlip", lambda cells: _table(
        TIME_FLIP, "time-flip", "Frames reversed (TimeFlip)", FLIP_LEAD, "reversed",
        ("Agreement", lambda s: Pct(s.agreement)), cells)),
)


# --- RepeatFrames ---------------------------------------------------------------------------

def _repeat_score(inputs: ScoringInputs) -> TimeReport | NotMeasured:
    return score_time_control(inputs.data, inputs.run,
                              load_time_records(inputs.run_dir, "repeat_frames"),
                              inputs.recording, "repeat_frames")


def _repeat_metadata(report: TimeReport) -> dict[str, Any]:
    o = report.overall
    return {"repeat_frames_changed": o.changed, "repeat_frames_n_compared": o.n_compared,
            "repeat_frames_n": o.n, "repeat_frames_not_asked": o.not_asked}


def _repeat_pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """RepeatFrames of every case of the cells, pooled per case; null when none was measured."""
    rows = [row for _, report in REPEAT_FRAMES.results(cells) for row in report.rows]
    if not rows:
        return {}
    s = time_group_stats(rows)
    return {"repeat_frames_changed": _nan(s.changed), "repeat_frames_n_compared": s.n_compared,
            "repeat_frames_n": s.n, "repeat_frames_not_asked": s.not_asked,
            "repeat_frames_consistency": _nan(s.consistency),
            "repeat_frames_original_accuracy": _nan(s.original_accuracy),
            "repeat_frames_repeated_accuracy": _nan(s.variant_accuracy)}


REPEAT_LEAD = (
    "Each multi-frame case of a family whose truth does not depend on how often a frame is "
    "shown (cross-frame count, appearance order, camera displacement, path length, turn "
    "direction) is also asked with every frame shown twice in a row (VSC-Repeat). <b>Changed"
    "</b>: of the cases where both replies parsed, the share whose answer is not the very same "
    "choice or number: a model that counts frames, not objects, changes its count. <b>Right "
    "both ways</b>: the share right as shown and repeated (a count or distance is right at "
    "MRA \u2265 0.5).")
REPEAT_METHODS = (
    ("repeat_frames",
     "each multi-frame case of a RepeatFrames family (object_count_across_frames, "
     "appearance_order, camera_displacement_m, path_length_m, turn_direction) is also asked "
     "with every frame shown twice in a row, same question, same gold. "
     "repeat_frames_changed = share of the repeat_frames_n_compared cases (both replies "
     "parsed) whose answer is not the very same choice or number; repeat_frames_n counts the "
     "cases asked both ways, repeat_frames_not_asked those not asked repeated; "
     "repeat_frames_consistency = right both ways / repeat_frames_n (" + RIGHT_RULE + "); "
     "repeat_frames_original_accuracy / repeat_frames_repeated_accuracy: each side alone. "
     "Pooled per case over a row's cells; null in 'common' rows"),
)
_REPEAT_COUNTS = {"repeat_frames_n_compared", "repeat_frames_n", "repeat_frames_not_asked"}
REPEAT_FRAMES: MetricSpec[TimeReport] = MetricSpec(
    name="repeat_frames", description=__doc__ or "", file="repeat_frames.json", version="2",
    result_model=TimeReport, score=_repeat_score,
    metadata=_repeat_metadata, methods=REPEAT_METHODS, pool=_repeat_pool, label="RepeatFrames",
    columns=tuple(Column(c, integer=c in _REPEAT_COUNTS) for c in (
        "repeat_frames_changed", "repeat_frames_n_compared", "repeat_frames_n",
        "repeat_frames_not_asked", "repeat_frames_consistency",
        "repeat_frames_original_accuracy", "repeat_frames_repeated_accuracy")),
    section=Section("repeat-frames", "RepeatFrames", lambda cells: _table(
        REPEAT_FRAMES, "repeat-frames", "Frames shown twice (RepeatFrames)", REPEAT_LEAD,
        "repeated", ("Changed", lambda s: Pct(s.changed)), cells)),
)
