"""End to end over real HTTP: ``eval-assets vqa run`` on a dataset with spatial cases against a fake
multi-image model, then the run folder scored per family.

The fake "sees" only what arrives: it answers a case from a table keyed by the exact sequence of
image parts it received (their hashes, in order). Frames sent out of order, merged, or missing
find no entry and get "I cannot tell", which the scores would show. A second server takes at
most two images per request, so the longer cases must arrive as the labelled mosaic.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.hashing import bytes_sha256
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.model_runs.spatial import mosaic_png
from eval_assets.schemas.predictions import AnswerRecord, RunSummary
from eval_assets.schemas.results import CellScores, PredictionCounts
from eval_assets.scoring.families import family_scores
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets.scoring.numeric import NUMERIC, score_numeric
from eval_assets.scoring.spatial import SPATIAL, score_spatial
from eval_assets.scoring.vqa import VQA, score_vqa
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    Reply,
    message_text,
)
from eval_assets_tests.model_runs.helpers import (
    ONE_CALL_PER_CASE,
    SpatialDataset,
    make_spatial_dataset,
)

# What the fake model replies to each spatial case when it sees the right frames (gold: size
# 45 cm, pair 2.5 m, camera 1.8 m, order "chair, table", count 3, direction front-left).
REPLIES = {"size": "It is about 0,5 m long.", "pair": "2.5", "camera": "1.5 metres",
           "order": "chair, table", "count": "3 chairs", "direction": "back-right"}
EXPECTED = {"object_size_cm": mean_relative_accuracy(50.0, 45.0),  # 0,5 m is 50 cm
            "pair_distance_m": 1.0, "camera_distance_m": mean_relative_accuracy(1.5, 1.8),
            "object_count_across_frames": 1.0, "appearance_order": 1.0,
            "relative_direction": 0.0, "presence": 1.0}


def _parts_key(body: dict[str, Any]) -> tuple[str, ...]:
    """The hashes of the request's image parts, in the order they arrived."""
    content = body["messages"][-1]["content"]
    return tuple(bytes_sha256(base64.b64decode(p["image_url"]["url"].split(",", 1)[1]))
                 for p in content if isinstance(p, dict) and p.get("type") == "image_url")


def seeing_model(dataset: SpatialDataset, max_images: int | None
                 ) -> Callable[[dict[str, Any]], Reply]:
    """A script answering each spatial case only when its frames arrive as they should: one
    part per frame in time order, or (more frames than ``max_images``) their one mosaic."""
    table: dict[tuple[str, ...], str] = {}
    for case in dataset.spatial:
        frames = [(dataset.root / image).read_bytes() for image in case["images"]]
        sent = ([mosaic_png(frames)] if max_images is not None and len(frames) > max_images
                else frames)
        table[tuple(bytes_sha256(f) for f in sent)] = REPLIES[case["id"].split("-")[1]]

    def script(body: dict[str, Any]) -> Reply:
        if "[spatial-" not in message_text(body):
            return Reply("yes")  # dimOS's presence cases
        return Reply(table.get(_parts_key(body), "I cannot tell."))
    return script


def _score(dataset: SpatialDataset, run_dir: Path) -> CellScores:
    data = load_private_dataset(dataset.root)
    run = load_run(run_dir)
    scores = {spec.name: outcome.model_dump(mode="json") for spec, outcome in (
        (VQA, score_vqa(data, run, "rec")), (SPATIAL, score_spatial(data, run, "rec")),
        (NUMERIC, score_numeric(data, run)))}
    return CellScores(recording="rec", model="vlm", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=2, succeeded=2, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0), scores=scores)


@pytest.mark.parametrize("max_images", [None, 2])
def test_vqa_run_answers_spatial_cases_and_the_run_scores_per_family(
        tmp_path: Path, max_images: int | None) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds", size=(48, 64))
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    out = tmp_path / "run"
    with OpenAICompatibleServer(seeing_model(dataset, max_images),
                                max_images=max_images) as srv:
        result = CliRunner().invoke(app, [
            "vqa", "run", str(dataset.root), "--model", "vlm", "--base-url", srv.base_url,
            "--output", str(out), "--no-describe", "--max-retries", "0", *ONE_CALL_PER_CASE])
        requests = srv.requests
    assert result.exit_code == 0, result.output
    assert "8/8 cases answered" in result.output
    assert len(requests) == 8 and all("[spatial-" in message_text(r.body) or
                                      "presence" in r.body["messages"][-1]["content"][-1]["text"]
                                      for r in requests)

    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.spatial is not None
    records = [AnswerRecord.model_validate_json(line)
               for line in (out / "answers.jsonl").read_text().splitlines()]
    layouts = {r.case_id: r.spatial.layout for r in records if r.spatial is not None}
    if max_images is None:
        assert summary.spatial.layouts == {"parts": 6} and set(layouts.values()) == {"parts"}
        assert ("spatial: 6 cases of up to 6 frames; 6 sent as image parts in order\n"
                in result.output)
    else:  # the 3-, 4- and 6-frame cases went as one mosaic each, and the run says so
        assert ("spatial: 6 cases of up to 6 frames; 3 sent as image parts in order, 3 as one "
                "labelled mosaic each: the endpoint takes at most 2 images per request"
                in result.output)
        assert summary.spatial.endpoint_max_images == 2
        assert summary.spatial.layouts == {"mosaic": 3, "parts": 3}
        assert layouts["spatial-count-object_count_across_frames"] == "mosaic"
        assert layouts["spatial-pair-pair_distance_m"] == "parts"

    families = family_scores(_score(dataset, out))
    assert {f: s.score for f, s in families.items()} == pytest.approx(EXPECTED)
    assert {f: s.n for f, s in families.items()} == {**{f: 1 for f in EXPECTED}, "presence": 2}
    assert {f: s.measure for f, s in families.items() if s.measure == "mra"}.keys() == {
        "object_size_cm", "pair_distance_m", "camera_distance_m", "object_count_across_frames"}
