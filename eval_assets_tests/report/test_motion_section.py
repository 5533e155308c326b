"""The motion families in the headline, the baselines and the report's "Motion" section, from a
tiny dataset with motion cases scored by the real metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.metrics.headline import MIN_FAMILY_N, score_families
from eval_assets.report.baselines import family_baselines
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import ALL_RECORDINGS, COMMON, build_leaderboard
from eval_assets.report.motion_section import (
    MOTION_ANGLE,
    MOTION_CHOICE,
    MOTION_DISTANCE,
    motion_number_chart,
    motion_number_rows,
    motion_section,
)
from eval_assets.schemas.results import CellScores, PredictionCounts
from eval_assets.scoring.families import family_scores, spatial_headline_cases
from eval_assets.scoring.inputs import ModelRun, load_private_dataset
from eval_assets.scoring.numeric import NUMERIC, score_numeric
from eval_assets.scoring.spatial import SPATIAL, score_spatial
from eval_assets.scoring.vqa import VQA, score_vqa
from eval_assets.vqa.spatial.truth import MOTION_CHOICE as GENERATED_CHOICE
from eval_assets.vqa.spatial.truth import MOTION_NUMERIC as GENERATED_NUMERIC
from eval_assets_tests.model_runs.helpers import make_spatial_dataset
from eval_assets_tests.scoring.conftest import answer

N = MIN_FAMILY_N  # every family just reaches the headline's minimum n
TURNS = ["left", "right", "no turn"]
ROUTES = ["forward, turn left", "turn left, forward"]


def _truth(family: str, i: int) -> str:
    """Case ``i``'s gold answer: half the displacements 0 (the camera stayed put), directions
    on both sides of ±180°; every family has more than one gold answer (a family of one is
    left out of the headline as uninformative), path lengths and turns mostly 3 m and 90°."""
    return {"camera_displacement_m": "0" if i % 2 else "2.0",
            "path_length_m": "3.0" if i % 4 else "5.0",
            "turn_angle_deg": "90" if i % 4 else "45",
            "egocentric_direction_deg": "-170" if i % 2 else "170",
            "turn_direction": TURNS[i % 3],
            "route_sequence": ROUTES[i % 2],
            "same_place": "yes" if i % 2 else "no"}[family]


def _rows() -> tuple:
    out = []
    for family in (*MOTION_DISTANCE, *MOTION_ANGLE, *MOTION_CHOICE):
        choices = {"turn_direction": TURNS, "route_sequence": ROUTES,
                   "same_place": ["yes", "no"]}.get(family)
        unit = None if choices else ("deg" if family in MOTION_ANGLE else "m")
        out += [(f"{i}", family, (0, 1, 2), "choice" if choices else "number", unit,
                 _truth(family, i), choices) for i in range(N)]
    return tuple(out)


# The "rough" model: distances 1 m too long, angles 20° off across ±180° (170 → -170),
# always "left", "no" and the first route; 3 replies it cannot read.
def _rough(family: str, i: int) -> str | None:
    if i == 0 and family in ("path_length_m", "turn_angle_deg", "same_place"):
        return "I cannot tell"
    gold = _truth(family, i)
    if family in MOTION_DISTANCE:
        return f"{float(gold) + 1:g} m"
    if family in MOTION_ANGLE:
        return f"{wrapped:g}" if (wrapped := float(gold) + 20) <= 180 else f"{wrapped - 360:g}"
    return {"turn_direction": "left", "route_sequence": ROUTES[0], "same_place": "no"}[family]


def _cells(tmp_path: Path) -> list[CellScores]:
    dataset = make_spatial_dataset(tmp_path / "ds", rows=_rows())
    # The helper's dimOS labels carry a canary in their answer; plain ones read back.
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    data = load_private_dataset(dataset.root)
    cells = []
    for model, reply in (("exact", lambda f, i: _truth(f, i)), ("rough", _rough)):
        answers = {c["id"]: answer(c["id"], "yes") for c in dataset.cases}
        for label in dataset.labels:
            index = int(label["id"].split("-")[1])
            answers[label["id"]] = answer(label["id"], reply(label["family"], index))
        run = ModelRun(answers=answers, descriptions={})
        scores = {spec.name: outcome.model_dump(mode="json") for spec, outcome in (
            (VQA, score_vqa(data, run, "rec")), (SPATIAL, score_spatial(data, run, "rec")),
            (NUMERIC, score_numeric(data, run)))}
        cells.append(CellScores(recording="rec", model=model, dataset_sha256="0" * 64,
                                predictions=PredictionCounts(
                                    cases=len(answers), succeeded=len(answers), failed=0,
                                    parse_failures=0, descriptions=0, descriptions_failed=0),
                                scores=scores))
    return cells


def test_the_sections_family_lists_are_the_generators() -> None:
    assert (*MOTION_DISTANCE, *MOTION_ANGLE) == GENERATED_NUMERIC
    assert MOTION_CHOICE == GENERATED_CHOICE


def test_motion_families_join_the_headline_and_the_baselines(tmp_path: Path) -> None:
    cells = _cells(tmp_path)
    motion = {*MOTION_DISTANCE, *MOTION_ANGLE, *MOTION_CHOICE}
    rough = family_scores(cells[1])
    assert motion <= set(rough) and all(rough[f].n == N for f in motion)
    # Scored by each family's rule: the 0-truth displacements 1 m off fail the zero rule (τ
    # 0.30 m), 20° off across ±180° is within 4 of the 10 angular tolerances.
    assert rough["egocentric_direction_deg"].score == pytest.approx(0.7)
    assert rough["turn_direction"].score == pytest.approx(7 / N)  # "left": 7 of 20 golds
    board = build_leaderboard(cells)
    pooled = board[(board["case_set"] == COMMON) & (board["recording"] == ALL_RECORDINGS)]
    by_model = {m: r for m, r in zip(pooled["model"], pooled.to_dict("records"), strict=True)}
    # dimOS's presence family has 2 cases (under the minimum n): the 7 motion families are in.
    assert by_model["exact"]["n_families"] == by_model["rough"]["n_families"] == 7
    assert by_model["exact"]["family_mean"] == pytest.approx(1.0)
    # The headline is the mean of the families' prior-free scores, not of their raw ones: a
    # constant answer ("left", the first route) scores its family's chance, 7 of 20 right or not.
    prior_free = {s.family: s.score for s in score_families(spatial_headline_cases(cells[1:]))}
    assert set(prior_free) == motion and all(v is not None for v in prior_free.values())
    assert prior_free["turn_direction"] == pytest.approx(1 / 3)
    assert prior_free["route_sequence"] == pytest.approx(1 / 2)
    assert by_model["rough"]["family_mean"] == pytest.approx(
        sum(v or 0.0 for v in prior_free.values()) / 7)
    assert by_model["rough"]["family_mean"] < by_model["exact"]["family_mean"]
    baselines = {b.family: b for b in family_baselines(cells)}
    assert motion <= set(baselines)
    assert baselines["camera_displacement_m"].kind == "mra"
    assert baselines["same_place"].kind == "accuracy"
    assert baselines["same_place"].frequency == pytest.approx(0.5)
    assert baselines["path_length_m"].frequency_answer == "3"  # the median truth
    assert baselines["path_length_m"].models["exact"].score == 1.0


def test_the_motion_section_draws_numbers_and_tabulates_choices(tmp_path: Path) -> None:
    cells = _cells(tmp_path)
    rows = motion_number_rows(cells)
    assert {r.family for r in rows} == {*MOTION_DISTANCE, *MOTION_ANGLE}
    for family in (*MOTION_DISTANCE, *MOTION_ANGLE):
        png = motion_number_chart(rows, family)
        assert png == motion_number_chart(rows, family)  # deterministic
        image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape[1] > 600
    with pytest.raises(ValueError, match="no motion rows"):
        motion_number_chart([r for r in rows if r.family != "path_length_m"], "path_length_m")
    html = motion_section(cells)
    assert html.startswith('<section id="motion"')
    assert html.count('class="chart"') == 4 and html.count("<h3>") == 7
    # turn_angle_deg of "rough": one unparseable reply, 19 answers 20° off.
    turn = html.split("<h3>turn angle deg</h3>")[1].split("<h3>")[0]
    assert re.search(r"rough</span></td><td[^>]*>20</td><td[^>]*>1</td>", turn)
    assert "20.0" in turn  # mean |error| over the parsed replies
    # -170 against 170 is 20° off, wrapped around, not 340°.
    ego = html.split("<h3>egocentric direction deg</h3>")[1].split("<h3>")[0]
    assert ">20.0<" in ego and ">340" not in ego
    same = html.split("<h3>same place</h3>")[1]
    assert "“no” ×19; no choice ×1" in same  # the answers "rough" gave
    assert "Gold answers: “no” ×10; “yes” ×10" in same
    assert motion_section([]) == ""


def test_the_report_places_motion_after_the_numeric_families(tmp_path: Path) -> None:
    cells = _cells(tmp_path)
    page = render_report(build_leaderboard(cells), cells, [], "t")
    assert 'href="#motion"' in page
    # Under the navigation's groups: Spatial (numeric families), then Motion, then the rest.
    assert page.index('id="numeric-families"') < page.index('id="g-motion"') \
        < page.index('id="motion"') < page.index('id="pope"')
    assert 'href="#motion"' not in render_report(
        build_leaderboard(cells[:0]), [], [], "t")


def test_many_distinct_answers_are_summed_up_beyond_the_listed_ones() -> None:
    from eval_assets.report.motion_section import MAX_ANSWERS_LISTED, _distribution

    # Nine distinct routes once each, and two replies read as no choice: 10 answers in all.
    answers = [f"forward, turn left {i}" for i in range(9)] + [None, None]
    text = _distribution(answers)
    assert text.startswith("no choice ×2; “forward, turn left 0” ×1; ")
    assert text.endswith(f"; {10 - MAX_ANSWERS_LISTED} other answers ×{10 - MAX_ANSWERS_LISTED}")
    assert text.count("“forward, turn left") == MAX_ANSWERS_LISTED - 1
