"""Every model's score on all cases and on the ones a blind forest cannot solve: per family, per
answer kind, pooled into the leaderboard's columns and shown in the report's section."""

from __future__ import annotations

import math
import random
from pathlib import Path

from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.schemas.spatial import SpatialLabel
from eval_assets.schemas.vqa import Label, dumps_line
from eval_assets.scoring import METRICS
from eval_assets.scoring.blind import BLIND, NO_AUDIT, SolvabilityScores, score_blind
from eval_assets.scoring.inputs import ModelRun, PrivateDataset, load_private_dataset
from eval_assets.vqa.bias import (
    BiasAudit,
    BiasConfig,
    BiasSummary,
    CaseBias,
    audit_cases,
    dataset_cases,
    write_bias_audit,
)
from eval_assets_tests.metrics.test_numeric_reply import random_reply
from eval_assets_tests.scoring.conftest import answer
from eval_assets_tests.vqa.test_bias import planted_cases, write_planted


def _dataset(root: Path, audited: bool = True) -> Path:
    write_planted(root, frames=30)
    _, labels = planted_cases(frames=30)
    (root / "labels.jsonl").write_text("".join(dumps_line(lab.public()) + "\n"
                                               for lab in labels))
    if audited:
        write_bias_audit(root, audit_cases(dataset_cases(root), BiasConfig(trees=40)))
    return root


def _first_choice_run(root: Path) -> ModelRun:
    """A model that always answers the first choice: right on every leaked closest_object."""
    data = load_private_dataset(root)
    return ModelRun(answers={c.id: answer(c.id, c.choices[0]) for c in data.cases.values()},
                    descriptions={})


def _cell(scores: SolvabilityScores | NotMeasured, model: str = "m") -> CellScores:
    return CellScores(recording="r", model=model, dataset_sha256="d",
                      predictions=PredictionCounts(cases=90, succeeded=90, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={BLIND.name: scores.model_dump(mode="json")})


def test_scores_on_all_and_on_unflagged_cases(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    data = load_private_dataset(root)
    scores = score_blind(data, _first_choice_run(root), "r")
    assert isinstance(scores, SolvabilityScores)
    leak = scores.by_family["closest_object"]
    # Right on every case, and every case is flagged: nothing left to score unflagged.
    assert (leak.n, leak.score_all, leak.flagged) == (30, 1.0, 30)
    assert leak.n_unflagged == 0 and leak.score_unflagged is None
    assert leak.blind_upper_bound == 1.0 and leak.flagged_share == 1.0
    control = scores.by_family["largest_visible_area"]
    assert control.flagged == 0 and control.score_all == control.score_unflagged
    assert control.mean_bias_score is not None and control.mean_bias_score < 0.45
    choice = scores.choice
    assert choice is not None and choice.n == 90 and scores.number is None
    assert choice.n_unflagged == sum(g.n_unflagged for g in scores.by_family.values())
    # Leaving out the leaked cases the model got for free lowers its accuracy.
    assert choice.score_unflagged is not None and choice.score_all is not None
    assert choice.score_unflagged < choice.score_all


def test_a_dataset_without_the_audit_is_not_measured(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds", audited=False)
    outcome = score_blind(load_private_dataset(root), _first_choice_run(root), "r")
    assert outcome == NotMeasured(reason=NO_AUDIT)


def test_leaderboard_columns_and_report_section(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "ds")
    scores = score_blind(load_private_dataset(root), _first_choice_run(root), "r")
    assert isinstance(scores, SolvabilityScores) and scores.choice is not None
    assert BLIND in METRICS
    assert BLIND.pool is not None and BLIND.section is not None
    pooled = BLIND.pool([_cell(scores), _cell(scores)])
    assert pooled["tst_accuracy_all"] == scores.choice.score_all
    assert pooled["tst_accuracy_unflagged"] == scores.choice.score_unflagged
    assert pooled["tst_n_unflagged"] == 2 * scores.choice.n_unflagged
    assert pooled["tst_n_flagged"] == 2 * scores.choice.flagged
    assert math.isnan(pooled["tst_mra_all"])  # no numeric case
    empty = BLIND.pool([_cell(NotMeasured(reason=NO_AUDIT))])
    assert empty["tst_n_unflagged"] is None and math.isnan(empty["tst_accuracy_all"])
    table = BLIND.section.build([_cell(scores)])
    families = [row[2].text for row in table.rows]  # type: ignore[union-attr]
    assert families == ["all choice", "closest_object", "largest_visible_area", "presence"]
    assert any(h == "Flagged share" for h, _ in table.headers)
    assert BLIND.metadata(scores)["accuracy_unflagged"] == scores.choice.score_unflagged


def test_no_reply_fails_blind_solvability(tmp_path: Path) -> None:
    # The "1e400 m" failed the whole run at this step; now it and any reply is one
    # case's parse failure (numeric cases and choice cases alike).
    rng = random.Random(1)
    replies = ["1e400 m", "1e-400 m", "3 units", "2+ m", *(random_reply(rng) for _ in range(60))]
    # Numeric cases are spatial cases of answer type number (dimOS's own cases all have choices).
    numbers = [SpatialLabel(id=f"n{i}", answer="2.0", family="camera_distance_m",
                            answer_type="number", unit="m", object_names=["chair"],
                            frame_index=0, evidence={"tracks": [
                                {"name": "chair", "center_world": [0.0, 0.0, 0.0]}]})
               for i in range(len(replies))]
    choices = [Label(id=f"c{i}", answer="chair", family="closest_object", frame_index=0,
                     object_names=["chair", "table"], choices=["chair", "table"], evidence={})
               for i in range(len(replies))]
    labels: list[SpatialLabel | Label] = [*numbers, *choices]
    flags = [CaseBias(id=lab.id, family=lab.family, bias_score=0.5, flagged=i % 2 == 0)
             for i, lab in enumerate(labels)]
    summary = BiasSummary(method="test", features=[], config=BiasConfig(), sklearn_version="-",
                          folds={"choice": None, "number": None}, families={})
    write_bias_audit(tmp_path, BiasAudit(cases=flags, summary=summary,
                                         kept=[lab.id for lab in labels]))
    run = ModelRun(answers={lab.id: answer(lab.id, replies[int(lab.id[1:])]) for lab in labels},
                   descriptions={})
    data = PrivateDataset(root=tmp_path, cases={}, labels=choices, spatial_labels=numbers)
    scores = score_blind(data, run, "r")
    assert isinstance(scores, SolvabilityScores)
    assert scores.number is not None and scores.number.n == len(replies)
    assert scores.choice is not None and scores.choice.n == len(replies)
