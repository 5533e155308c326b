"""FlipEval scoring: the mirrored gold is the gold with left and right swapped; consistency is
both answers right; not measured without mirrored re-asks."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from eval_assets.atomic import write_text_atomic
from eval_assets.choices import flip_text
from eval_assets.metrics.flip import FlipCase, FlipReport, flip_eval
from eval_assets.report.flip_section import flip_section
from eval_assets.schemas.predictions import RUN_FLIPS, FlipRecord
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.scoring.flip import FLIP, NO_CASES, NOT_ASKED, load_flips, score_flip
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets_tests.scoring.conftest import answer, write_run

SIDES = ["left", "center", "right"]


def _case(case_id: str, gold: str, reply: str | None, mirrored: str | None,
          asked: bool = True, frame: int = 0) -> FlipCase:
    return FlipCase(case_id=case_id, family="horizontal_direction", recording="r",
                    frame_index=frame, choices=SIDES, answer=gold, reply=reply,
                    mirrored_reply=mirrored, mirrored_asked=asked)


def test_consistency_needs_both_answers_right_and_agreement_follows_the_mirror() -> None:
    report = flip_eval([
        _case("a", "left", "left", "right"),  # consistent
        _case("b", "left", "left", "left", frame=1),  # a favourite side: not consistent
        _case("c", "center", "center", "center", frame=2),  # the centre mirrors to itself
        _case("d", "right", "left", "right", frame=3),  # wrong, then right: agrees
        _case("e", "left", "left", None, frame=4),  # mirrored call failed
        _case("f", "left", "left", None, asked=False, frame=5),  # mirror never asked
    ])
    o = report.overall
    assert (o.n, o.not_asked, o.consistent) == (5, 1, 2)
    assert o.consistency == pytest.approx(2 / 5)
    assert o.original_accuracy == pytest.approx(4 / 5)
    assert o.variant_accuracy == pytest.approx(2 / 5)  # a's "right" and c's "center"
    assert (o.n_compared, o.agreement) == (4, pytest.approx(3 / 4))  # all but b
    assert o.ci_low is not None and o.ci_low < 0.4 < (o.ci_high or 0)
    assert [r.variant for r in report.rows][-2:] == ["failed_call", None]


# A flip.json as FlipEval wrote it before the paired controls shared one type (the case below,
# written by that code): the stored names, their order, and no ``changed``.
STORED = (Path(__file__).resolve().parent / "snapshots" / "flip_before_paired.json").read_text()


def test_flip_results_keep_flipevals_stored_names_both_ways() -> None:
    report = flip_eval([_case("a", "left", "left", "right")])
    assert report.model_dump_json(indent=2) == STORED  # written as before, to the byte
    read = FlipReport.model_validate_json(STORED)  # and results written before read back
    assert read == report
    assert (read.overall.variant_accuracy, read.overall.n_compared) == (1.0, 1)
    assert read.overall.changed == 0.0 and read.rows[0].variant == "correct"
    with pytest.raises(ValidationError, match="overall"):
        FlipReport.model_validate({"by_family": {}, "rows": []})


def test_scoring_a_run_reads_flips_and_the_labels(sample_dataset: Path, tmp_path: Path) -> None:
    data = load_private_dataset(sample_dataset)
    sided = [label for label in data.labels if label.choices == SIDES]
    assert sided, "the sample dataset has horizontal_direction cases"
    run_dir = write_run(tmp_path / "run", [answer(x.id, x.answer) for x in data.labels], [])
    assert score_flip(data, load_run(run_dir), load_flips(run_dir), "rec") == \
        NotMeasured(reason=NOT_ASKED)
    records = [FlipRecord(model="m", config_hash="h", status="success", attempts=1,
                          case_id=x.id, question="q", choices=SIDES,
                          raw_response=flip_text(x.answer)) for x in sided]
    # One stale record (other choices shown) counts as not asked.
    records[0] = records[0].model_copy(update={"choices": ["right", "center", "left"]})
    write_text_atomic(run_dir / RUN_FLIPS, "".join(r.model_dump_json() + "\n" for r in records))
    report = score_flip(data, load_run(run_dir), load_flips(run_dir), "rec")
    assert not isinstance(report, NotMeasured)
    assert report.overall.n == len(sided) - 1 and report.overall.not_asked == 1
    assert report.overall.consistency == 1.0
    assert list(report.by_family) == ["horizontal_direction"]
    no_sides = data.__class__(**{**data.__dict__, "labels": [
        x for x in data.labels if x.choices != SIDES]})
    assert score_flip(no_sides, load_run(run_dir), load_flips(run_dir), "rec") == \
        NotMeasured(reason=NO_CASES)
    cell = CellScores(recording="rec", model="m", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=1, succeeded=1, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={FLIP.name: report.model_dump(mode="json")})
    html = flip_section([cell])
    assert "Mirror consistency (FlipEval)" in html and "100.0%" in html
    assert "FlipEval by question family" in html
    assert FLIP.pool is not None and FLIP.pool([cell])["flip_n"] == len(sided) - 1
    assert "Not measured" in flip_section([])
