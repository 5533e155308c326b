"""TimeFlip and RepeatFrames scoring from a real run folder: the re-asks read back by case,
scored against the labels (transformed for TimeFlip), stale records not asked, not measured
without re-asks; then the leaderboard columns and the report section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_assets.metrics.paired import PairedReport
from eval_assets.model_runs.runner import run_model
from eval_assets.report.metric_sections import render_table
from eval_assets.schemas.predictions import RUN_TIME_FLIPS
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.scoring.inputs import PrivateDataset, load_run, load_spatial_labels
from eval_assets.scoring.time_controls import (
    NOT_ASKED,
    REPEAT_FRAMES,
    TIME_FLIP,
    load_time_records,
    score_time_control,
)
from eval_assets.time_controls import Control
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply, image_count
from eval_assets_tests.model_runs.helpers import make_spatial_dataset
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

COUNT = "spatial-count-object_count_across_frames"  # 6 frames, gold 3
ORDER = "spatial-order-appearance_order"  # 3 frames, gold "chair, table"


def _counts_frames(body: dict) -> Reply:
    """A model that counts frames: twice the frames, twice the count; it reads the order from
    the first frame shown whatever their number."""
    n = image_count(body)
    text = str(body)
    if COUNT in text:
        return Reply("3" if n == 6 else "6")
    if ORDER in text:
        return Reply("chair, table")
    return Reply("front-left")


def _cell(spec_name: str, report: PairedReport) -> CellScores:
    return CellScores(recording="rec", model="m", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=1, succeeded=1, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={spec_name: report.model_dump(mode="json")})


def _private(root: Path) -> PrivateDataset:
    # The spatial half of the private dataset, as load_private_dataset reads it (the helper's
    # dimOS labels carry a canary, so they are not loadable answers).
    cases, labels = load_spatial_labels(root)
    return PrivateDataset(root=root, cases={}, labels=[], spatial_cases={c.id: c for c in cases},
                          spatial_labels=labels)


def _score(root: Path, run_dir: Path, control: Control) -> PairedReport | NotMeasured:
    return score_time_control(_private(root), load_run(run_dir),
                              load_time_records(run_dir, control), "rec", control)


def test_a_run_is_scored_both_ways_pooled_and_reported(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    run_dir = tmp_path / "run"
    with OpenAICompatibleServer(_counts_frames) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, run_dir, max_concurrency=2, describe=False)
        assert _score(dataset.root, run_dir, "time_flip") == \
            NotMeasured(reason=NOT_ASKED["time_flip"])
        run_model(dataset.root, client, run_dir, max_concurrency=2, describe=False,
                  time_flips=True, repeat_frames=True)
    flipped = _score(dataset.root, run_dir, "time_flip")
    assert not isinstance(flipped, NotMeasured)
    # TimeFlip covers the count only (appearance order and relative direction are left out).
    assert list(flipped.by_family) == ["object_count_across_frames"]
    assert (flipped.overall.n, flipped.overall.consistency, flipped.overall.agreement) == \
        (1, 1.0, 1.0)
    repeated = _score(dataset.root, run_dir, "repeat_frames")
    assert not isinstance(repeated, NotMeasured)
    assert list(repeated.by_family) == ["appearance_order", "object_count_across_frames"]
    assert repeated.by_family["object_count_across_frames"].changed == 1.0  # 3 -> 6
    assert repeated.by_family["appearance_order"].changed == 0.0
    assert repeated.overall.changed == pytest.approx(0.5)
    assert repeated.overall.consistency == pytest.approx(0.5)

    # A record of another dataset's case (other frames shown) counts as not asked.
    records = read_jsonl(run_dir / RUN_TIME_FLIPS)
    records[0]["images"] = records[0]["images"][:-1]
    (run_dir / RUN_TIME_FLIPS).write_text("".join(json.dumps(r) + "\n" for r in records))
    stale = _score(dataset.root, run_dir, "time_flip")
    assert not isinstance(stale, NotMeasured)
    assert (stale.overall.n, stale.overall.not_asked) == (0, 1)

    cells = [_cell(TIME_FLIP.name, flipped), _cell(REPEAT_FRAMES.name, repeated)]
    assert TIME_FLIP.pool is not None and REPEAT_FRAMES.pool is not None
    pooled = TIME_FLIP.pool(cells)
    assert (pooled["time_flip_n"], pooled["time_flip_consistency"]) == (1, 1.0)
    assert set(pooled) == {c.name for c in TIME_FLIP.columns}
    pooled = REPEAT_FRAMES.pool(cells)
    assert (pooled["repeat_frames_changed"], pooled["repeat_frames_n_compared"]) == (0.5, 2)
    assert set(pooled) == {c.name for c in REPEAT_FRAMES.columns}
    assert TIME_FLIP.pool([]) == {}
    for spec, title in ((TIME_FLIP, "Frames reversed (TimeFlip)"),
                        (REPEAT_FRAMES, "Frames shown twice (RepeatFrames)")):
        assert spec.section is not None
        html = render_table(spec.section.build(cells))
        assert title in html and "object_count_across_frames" in html and "100.0%" in html
        assert "Not measured" in render_table(spec.section.build([]))
