"""Per-family baselines on the common cases, the blind model from run configs, the section."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.report.baselines import (
    FamilyBaselines,
    baseline_models,
    blind_models,
    family_baselines,
)
from eval_assets.report.baselines_section import baselines_section
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard, leaderboard_json
from eval_assets.scoring.numeric import NUMERIC, NumericRow, NumericScores, case_score, scored_by
from eval_assets.scoring.spatial import SPATIAL
from eval_assets_tests.report.builders import THIRDS, result, row


def _rows(presence_right: int, direction_right: int, n: int = 60) -> list[dict[str, Any]]:
    # presence: gold "yes" on 2 of 3 cases; direction: gold always "left".
    out = [row(f"p{i}", "presence", "yes" if i % 3 else "no",
               ("yes" if i % 3 else "no") if i < presence_right else ("no" if i % 3 else "yes"),
               "r", frame_index=i) for i in range(n)]
    out += [row(f"h{i}", "horizontal_direction", "left",
                "left" if i < direction_right else "right", "r", THIRDS, frame_index=i)
            for i in range(n)]
    return out


def _baselines() -> list[FamilyBaselines]:
    results = [result("r", "vlm", _rows(presence_right=60, direction_right=62)),
               result("r", "blind", _rows(presence_right=30, direction_right=60))]
    return family_baselines(results, blind=["blind"])


def test_frequency_and_blind_baselines_and_the_flag() -> None:
    presence, direction = _baselines()
    assert presence.family == "presence" and presence.n == 60
    assert presence.frequency_answer == "yes"
    assert presence.frequency == pytest.approx(40 / 60)  # from the labels alone
    assert presence.blind_model == "blind" and presence.blind == pytest.approx(0.5)
    assert presence.better == "frequency"
    vlm = presence.models["vlm"]
    assert "blind" not in presence.models  # a baseline is not compared with itself
    assert vlm.score == 1.0 and vlm.difference == pytest.approx(1 / 3) and vlm.beats
    assert not presence.flagged
    # direction: gold always "left", so the frequency baseline is perfect and nobody beats it.
    assert direction.frequency_answer == "left" and direction.frequency == 1.0
    assert direction.models["vlm"].beats is False and direction.flagged


def test_the_better_baseline_is_the_blind_model_when_it_scores_higher() -> None:
    results = [result("r", "vlm", _rows(60, 60)), result("r", "blind", _rows(59, 60))]
    presence = family_baselines(results, blind=["blind"])[0]
    assert presence.better == "blind" and presence.blind == pytest.approx(59 / 60)
    assert presence.flagged  # one case better than the blind model is within the MDD


def test_without_blind_models_only_the_frequency_baseline_counts() -> None:
    results = [result("r", "vlm", _rows(60, 60))]
    presence = family_baselines(results)[0]
    assert presence.blind_model is None and presence.blind is None
    assert presence.better == "frequency"


def test_blind_models_are_read_from_the_run_configs(tmp_path: Path) -> None:
    def run(name: str, client: dict[str, Any]) -> tuple[str, Path]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"client": client}), "utf-8")
        return name, folder

    runs = [run("b", {"serve": "blind-smollm2", "base_url": None}),
            run("r", {"serve": "random"}), run("hosted", {"base_url": "http://x/v1"}),
            ("none", tmp_path / "absent")]
    assert blind_models(runs) == ["b"]
    # The board's blind baselines by kind: the random guesser too; a served one is a model.
    runs.append(run("served-random", {"serve": "random", "base_url": "http://x/v1"}))
    assert baseline_models(runs) == {"b": "blind", "r": "random"}


def test_section_marks_flagged_families_and_the_json_carries_them() -> None:
    baselines = _baselines()
    html = baselines_section(baselines)
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html)
    flagged = [r for r in rows if "no model beats the baselines" in r]
    assert len(flagged) == 1 and "horizontal direction" in flagged[0]
    assert 'class="flagged"' in flagged[0]
    assert "1 of 2 families flagged: horizontal direction." in html
    assert "66.7%" in html and "(yes)" in html and "(blind)" in html
    document = json.loads(leaderboard_json(build_leaderboard([]), baselines=baselines))
    assert [b["flagged"] for b in document["baselines"]] == [False, True]


def test_report_has_the_baselines_section() -> None:
    results = [result("r", "vlm", _rows(60, 62)), result("r", "blind", _rows(30, 60))]
    text = render_report(build_leaderboard(results), results, [], "t", blind=["blind"])
    assert 'href="#baselines"' in text and '<section id="baselines">' in text
    assert "no model beats the baselines" in text


def _with_spatial(cell: Any, sizes: list[tuple[float, float | None]],
                  directions: list[tuple[str, str]]) -> Any:
    """``cell`` with numeric rows (target, prediction) of object_size_cm and spatial choice
    rows (gold, reply) of relative_direction, scored by the real metric functions."""
    rows = [NumericRow(case_id=f"s{i}", family="object_size_cm", unit="cm", target=t,
                       predicted=p, mra=0.0 if p is None else mean_relative_accuracy(p, t))
            for i, (t, p) in enumerate(sizes)]
    numeric = NumericScores(n=len(rows), unparseable=0, mean_relative_accuracy=0.0,
                            mean_absolute_relative_error=None, rows=rows)
    choices = ["front-left", "front-right", "back-left", "back-right"]
    spatial = vqa_accuracy([row(f"d{i}", "relative_direction", gold, reply, cell.recording,
                                choices, frame_index=i)
                            for i, (gold, reply) in enumerate(directions)])
    scores = {**cell.scores, NUMERIC.name: numeric.model_dump(mode="json"),
              SPATIAL.name: spatial.model_dump(mode="json")}
    return cell.model_copy(update={"scores": scores})


def test_spatial_families_get_baselines_on_the_spatial_cases_every_model_answered() -> None:
    targets = [10.0, 20.0, 30.0, 40.0, 50.0] * 8
    golds = ["front-left", "back-right", "front-left", "front-right"] * 10
    vlm = _with_spatial(result("r", "vlm", _rows(60, 60)), [(t, t) for t in targets],
                        [(g, g) for g in golds])
    # The blind model says 30 cm and "front-left" to everything, and skipped one size case.
    blind = _with_spatial(result("r", "blind", _rows(30, 60)),
                          [(t, 30.0) for t in targets[:-1]], [(g, "front-left") for g in golds])
    by_family = {b.family: b for b in family_baselines([vlm, blind], blind=["blind"])}
    assert list(by_family)[-2:] == ["object_size_cm", "relative_direction"]
    size = by_family["object_size_cm"]
    assert size.kind == "mra" and size.n == 39  # the case the blind model lacks is left out
    assert size.frequency_answer == "30"  # the median of the gold numbers
    assert size.models["vlm"].score == 1.0 and size.models["vlm"].beats
    direction = by_family["relative_direction"]
    assert direction.n == 40 and direction.frequency_answer == "front-left"
    assert direction.frequency == pytest.approx(0.5) and direction.blind == pytest.approx(0.5)
    assert direction.models["vlm"].beats and not direction.flagged


def test_a_model_answering_the_median_does_not_beat_the_frequency_baseline() -> None:
    targets = [20.0 + 10 * i for i in range(40)]
    results = [_with_spatial(result("r", "vlm", _rows(60, 60)), [(t, t) for t in targets],
                             [("front-left", "front-left")] * 40),
               _with_spatial(result("r", "weak", _rows(60, 60)), [(t, 215.0) for t in targets],
                             [("front-left", "back-right")] * 40)]
    by_family = {b.family: b for b in family_baselines(results)}
    size = by_family["object_size_cm"]
    assert size.kind == "mra" and size.n == 40
    assert size.frequency_answer == "215"  # the median of the targets 20 ... 410
    assert size.models["vlm"].score == 1.0 and size.models["vlm"].beats
    assert size.models["weak"].beats is False  # answering the median is the baseline itself
    direction = by_family["relative_direction"]
    assert direction.frequency_answer == "front-left" and direction.flagged  # gold is constant
    # dimOS's families are still there, in their order, before the spatial ones.
    assert list(by_family)[:2] == ["presence", "horizontal_direction"]


def _with_numeric(cell: Any, family: str, unit: str, pairs: list[tuple[float, float]]) -> Any:
    """``cell`` with numeric rows (target, prediction) of ``family``, scored by its rule."""
    rows = [NumericRow(case_id=f"n{i}", family=family, unit=unit, target=t, predicted=p,
                       mra=case_score(p, t, family, unit), scored_by=scored_by(family, unit))
            for i, (t, p) in enumerate(pairs)]
    numeric = NumericScores(n=len(rows), unparseable=0, mean_relative_accuracy=0.0,
                            mean_absolute_relative_error=None, rows=rows)
    return cell.model_copy(update={"scores": {**cell.scores,
                                              NUMERIC.name: numeric.model_dump(mode="json")}})


@pytest.mark.parametrize(("family", "unit", "targets", "median_scores"), [
    # Half the camera stayed put (truth 0): MRA of the median would divide by 0.
    ("camera_displacement_m", "m", [0.0] * 21 + [2.0] * 19, [1.0] * 21 + [0.0] * 19),
    # Angles: the median, -10, is 350 as a direction, scored by angular accuracy.
    ("egocentric_direction_deg", "deg", [-10.0] * 21 + [350.0] * 19, [1.0] * 40),
])
def test_numeric_baselines_score_the_median_by_the_familys_rule(
        family: str, unit: str, targets: list[float], median_scores: list[float]) -> None:
    results = [_with_numeric(result("r", "vlm", _rows(60, 60)), family, unit,
                             [(t, t) for t in targets])]
    baseline = {b.family: b for b in family_baselines(results)}[family]
    assert baseline.kind == "mra" and baseline.n == 40
    assert baseline.frequency == pytest.approx(sum(median_scores) / 40)
    assert baseline.models["vlm"].score == 1.0
