"""FlipEval for the left/right families: each left/right case re-asked about its mirrored image
(gold: left and right swapped); consistency = both answers right.

Measured only when the run asked the mirrored cases (``flips.jsonl`` in its folder, asked with
the rotations: :mod:`eval_assets.model_runs.flips`); otherwise, or when the dataset has no
left/right case, the result is a not-measured record. The leaderboard pools it per case over a
row's cells; the report shows it beside CircularEval.
"""

from __future__ import annotations

from pathlib import Path

from eval_assets.choices import is_left_right
from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.flip import FlipCase, FlipReport, flip_eval
from eval_assets.schemas.predictions import RUN_FLIPS, FlipRecord
from eval_assets.schemas.results import NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.paired import PairedFigures
from eval_assets.scoring.spec import MetricSpec, ScoringInputs, Section

NAME = "flip_eval"
NOT_ASKED = "no mirrored cases asked"
NO_CASES = "no left/right cases"


def load_flips(run_dir: Path) -> dict[str, FlipRecord] | None:
    """The standing mirrored re-asks of a run folder by case id; None when none were asked."""
    path = Path(run_dir) / RUN_FLIPS
    if not path.is_file():
        return None
    return {r.case_id: r for r in read_jsonl(path, FlipRecord)}


def flip_cases(data: PrivateDataset, run: ModelRun, flips: dict[str, FlipRecord],
               recording: str) -> list[FlipCase]:
    """One FlipEval case per left/right label. A mirror whose record showed other choices than
    the label's (a dataset changed since the run) was not asked."""
    cases = []
    for label in data.labels:
        if not is_left_right(label.choices):
            continue
        answer = run.answers.get(label.id)
        record = flips.get(label.id)
        asked = record is not None and record.choices == list(label.choices)
        cases.append(FlipCase(
            case_id=label.id, family=label.family, recording=recording,
            frame_index=label.frame_index, choices=label.choices, answer=label.answer,
            reply=answer.raw_response if answer and answer.status == "success" else None,
            mirrored_reply=(record.raw_response if asked and record is not None
                            and record.status == "success" else None),
            mirrored_asked=asked))
    return cases


def score_flip(data: PrivateDataset, run: ModelRun, flips: dict[str, FlipRecord] | None,
               recording: str) -> FlipReport | NotMeasured:
    """FlipEval of a cell; not measured without mirrored re-asks or left/right cases."""
    if flips is None:
        return NotMeasured(reason=NOT_ASKED)
    cases = flip_cases(data, run, flips, recording)
    if not cases:
        return NotMeasured(reason=NO_CASES)
    return flip_eval(cases)


def _score(inputs: ScoringInputs) -> FlipReport | NotMeasured:
    return score_flip(inputs.data, inputs.run, load_flips(inputs.run_dir), inputs.recording)


FIGURES = PairedFigures(
    prefix="flip", variant="mirrored",
    pooled=("consistency", "ci_low", "ci_high", "n", "not_asked", "original_accuracy",
            "variant_accuracy", "agreement"),
    shown=("consistency", "n", "not_asked", "agreement"))


METHODS = (
    ("flip_eval",
     "each left/right case (its choices name left or right and are the same set with the two "
     "words swapped) is also asked about its image mirrored horizontally, with left and right "
     "swapped in the question, the choices shown in the same order; the mirrored gold answer "
     "is the gold with left and right swapped. flip_n counts the cases asked both ways, "
     "flip_not_asked those whose mirror was never asked. flip_consistency = cases answered "
     "correctly both ways / flip_n (a failed call or unparseable reply is wrong), with the "
     "frame-clustered 95% interval; flip_original_accuracy / flip_mirrored_accuracy: each side "
     "alone; flip_agreement: share of the cases where both replies named a choice whose "
     "mirrored choice is the mirror of the original one. Pooled per case over a row's cells; "
     "null in 'common' rows"),
)


FLIP: MetricSpec[FlipReport] = MetricSpec(
    order=30,
    name=NAME, description=__doc__ or "", file="flip.json", version="1",
    result_model=FlipReport, score=_score, needs=frozenset({"flips"}),
    metadata=FIGURES.metadata, methods=METHODS, pool=lambda cells: FIGURES.pool(FLIP, cells),
    label="FlipEval", columns=FIGURES.columns(),
    section=Section("flip", "Mirror", drawn=True, after="circular"),
)
