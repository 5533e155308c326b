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

from collections.abc import Callable, Sequence
from pathlib import Path

from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.paired import PairedReport, PairedRow, PairedStats, paired_stats
from eval_assets.metrics.time_controls import TimeCase, time_eval
from eval_assets.model_runs.time_controls import CONTROL_FILES
from eval_assets.schemas.predictions import TimeControlRecord
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.paired import Figure, PairedFigures, rows_by_model
from eval_assets.scoring.spec import (
    Cell,
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
                       control: Control) -> PairedReport | NotMeasured:
    """``control`` of a cell; not measured without its re-asks or cases of its families."""
    if records is None:
        return NotMeasured(reason=NOT_ASKED[control])
    cases = time_cases(data, run, records, recording, control)
    if not cases:
        return NotMeasured(reason=NO_CASES[control])
    return time_eval(cases, control)


def _interval(s: PairedStats) -> Cell:
    if s.consistency is None:
        return Pct(None)
    return Join((Pct(s.consistency), Text(" "),
                 Text(f"[{markdown_number(s.ci_low)}, {markdown_number(s.ci_high)}]", "ci")))


def _groups(rows: list[PairedRow]) -> list[tuple[str, PairedStats]]:
    families = sorted({r.family for r in rows})
    return [(ALL, paired_stats(rows)),
            *((f, paired_stats([r for r in rows if r.family == f])) for f in families)]


def _table(spec: MetricSpec[PairedReport], title: str, lead: str, variant: str,
           last: tuple[str, Callable[[PairedStats], Cell]],
           cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple(
        (Text(model, "model"), Text(family, "b" if family == ALL else None),
         Join((Int(s.n), Text(" "), Text(f"({s.not_asked} not asked)", "ci"))),
         _interval(s), Pct(s.original_accuracy), Pct(s.variant_accuracy), Int(s.n_compared),
         last[1](s))
        for model, model_rows in rows_by_model(spec, cells).items()
        for family, s in _groups(model_rows))
    return ReportTable(
        anchor=_anchor(spec.name), title=title, lead=lead, rows=rows,
        empty=f"Not measured: no run asked the {variant} cases (the vlm resource's switch is "
              "off, the run had a budget or went through the Batch API), or the datasets have "
              "no multi-frame case of these families.",
        headers=(("Model", False), ("Family", False), ("Cases", True),
                 ("Right both ways [95% CI]", True), ("Original", True),
                 (variant.capitalize(), True), ("Both parsed", True), (last[0], True)))


def _anchor(control: str) -> str:
    return control.replace("_", "-")


def _time_control(control: Control, *, order: int, version: str, label: str, variant: str,
                  pooled: tuple[Figure, ...], shown: tuple[Figure, ...],
                  methods: tuple[tuple[str, str], ...], title: str, lead: str,
                  last: tuple[str, Callable[[PairedStats], Cell]]) -> MetricSpec[PairedReport]:
    """The metric of one time control, written to ``<control>.json``: its leaderboard columns
    (``pooled``) and asset metadata (``shown``) are figures under its name
    (:class:`PairedFigures`); its report table ends in the ``last`` column."""
    figures = PairedFigures(prefix=control, variant=variant, pooled=pooled, shown=shown)

    def score(inputs: ScoringInputs) -> PairedReport | NotMeasured:
        return score_time_control(inputs.data, inputs.run,
                                  load_time_records(inputs.run_dir, control), inputs.recording,
                                  control)

    spec: MetricSpec[PairedReport] = MetricSpec(
        order=order, name=control, description=__doc__ or "", file=f"{control}.json",
        version=version,
        # Scored against the spatial labels, which label overrides never touch (as
        # spatial_accuracy): an override is no input of it.
        result_model=PairedReport, score=score, metadata=figures.metadata, methods=methods,
        pool=lambda cells: figures.pool(spec, cells), label=label, columns=figures.columns(),
        section=Section(_anchor(control), label, lambda cells: _table(
            spec, title, lead, figures.variant, last, cells)))
    return spec


# --- TimeFlip -------------------------------------------------------------------------------

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
TIME_FLIP = _time_control(
    "time_flip", order=110, version="3", label="TimeFlip", methods=TIME_FLIP_METHODS,
    variant="reversed",
    pooled=("consistency", "ci_low", "ci_high", "n", "not_asked", "original_accuracy",
            "variant_accuracy", "agreement"),
    shown=("consistency", "n", "not_asked", "agreement"),
    title="Frames reversed (TimeFlip)", lead=FLIP_LEAD,
    last=("Agreement", lambda s: Pct(s.agreement)))


# --- RepeatFrames ---------------------------------------------------------------------------

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
REPEAT_FRAMES = _time_control(
    "repeat_frames", order=120, version="3", label="RepeatFrames", methods=REPEAT_METHODS,
    variant="repeated",
    pooled=("changed", "n_compared", "n", "not_asked", "consistency", "original_accuracy",
            "variant_accuracy"),
    shown=("changed", "n_compared", "n", "not_asked"),
    title="Frames shown twice (RepeatFrames)", lead=REPEAT_LEAD,
    last=("Changed", lambda s: Pct(s.changed)))
