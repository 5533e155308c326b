"""End to end on a seeded synthetic recording: the spatial gold answers against scene truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.schemas.spatial import SpatialLabel
from eval_assets.vqa.leakage import find_leaks
from eval_assets.vqa.spatial.truth import MULTI_FRAME, NUMERIC, check_labels, per_family

SCENE_SEED = 41  # the benchmark (benchmarks/spatial_truth.py) uses other seeds
FRAMES = 64


@pytest.mark.slow
def test_spatial_gold_answers_agree_with_the_scene_truth(tmp_path: Path) -> None:
    db, out = tmp_path / "r.db", tmp_path / "dataset"
    runner = CliRunner()
    made = runner.invoke(app, ["recording", "synthesize", str(db), "--scene-seed",
                               str(SCENE_SEED), "--frames", str(FRAMES)])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["vqa", "generate", str(db), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "spatial cases (spatial_cases.jsonl)" in result.output
    labels = [SpatialLabel.model_validate_json(line) for line in
              (out / "audit" / "spatial_labels.jsonl").read_text().splitlines()]
    public = (out / "spatial_cases.jsonl").read_text().splitlines()
    assert len(public) == len(labels) == len((out / "spatial_labels.jsonl").read_text()
                                             .splitlines())
    scene = json.loads(db.with_suffix(".scene.json").read_text())
    # The loop makes the order questions meaningful: objects enter and leave the view.
    seen: dict[int, list[int]] = {}
    for frame in scene["frames"]:
        for obj in frame["objects"]:
            seen.setdefault(obj["id"], []).append(frame["index"])
    assert any(f[0] > 0 for f in seen.values()) and any(f[-1] < FRAMES - 1 for f in seen.values())
    checks = check_labels(labels, scene)
    figures = per_family(checks)
    for family in NUMERIC:
        if figures[family]["checked"]:
            assert figures[family]["score"] >= 0.85, (family, figures)
    for family in MULTI_FRAME:
        if figures[family]["checked"]:
            assert figures[family]["score"] >= 0.95, (family, figures)
    assert sum(figures[f]["checked"] > 0 for f in (*NUMERIC, *MULTI_FRAME)) >= 5, figures
    # No count or direction answer is more than half its family: a guess cannot win them.
    run = json.loads((out / "audit" / "run.json").read_text())
    balance = run["spatial_answers_per_family"]
    # (Counts are not asked where a marked object may show: it could be one of the name.)
    assert "relative_direction" in balance, balance
    for family, record in balance.items():
        assert record["n"] == sum(lab.family == family for lab in labels)
        if record["n"] >= 3:
            assert record["majority_share"] <= 0.5, (family, record)
    assert "most common" in result.output
    assert find_leaks(out) == []


def test_every_generated_spatial_family_is_checked_once_by_how_it_is_scored() -> None:
    """The truth's family groups come from the declarations: each generated spatial family is in
    exactly one group, the motion ones are the motion generators, a number with a unit from
    tracks is scored by MRA and a count by agreement."""
    from eval_assets.family_spec import families
    from eval_assets.vqa.spatial.motion import MOTION_GENERATORS
    from eval_assets.vqa.spatial.truth import (
        CHECKED_FAMILIES,
        MOTION_CHOICE,
        MOTION_NUMERIC,
        family_is_motion,
    )

    generated = [s.name for s in families("spatial") if s.rule is not None]
    assert sorted(CHECKED_FAMILIES) == sorted(generated)
    assert len(set(CHECKED_FAMILIES)) == len(CHECKED_FAMILIES)
    assert set(MOTION_NUMERIC) | set(MOTION_CHOICE) == set(MOTION_GENERATORS)
    assert all(family_is_motion(f) == (f in MOTION_GENERATORS) for f in generated)
    assert "object_count_across_frames" in MULTI_FRAME and "camera_distance_m" in NUMERIC
    assert "room_area_m2" not in CHECKED_FAMILIES  # declared, never generated
