"""TimeFlip's and RepeatFrames' re-asks in a run: the frames reversed or doubled, the choices
transformed, only the covered families, stored apart, resumed by content, switched off, skipped
under a budget, and nothing private sent; then the same through the local random model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.model_runs.client import open_model
from eval_assets.model_runs.prompts import image_data_url
from eval_assets.model_runs.runner import run_model
from eval_assets.model_runs.time_controls import time_control_cases
from eval_assets.schemas.cost import Price
from eval_assets.schemas.predictions import ModelSpec, TimeControlRecord
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.time_controls import reverse_route
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    message_text,
)
from eval_assets_tests.model_runs.helpers import (
    CANARY,
    SPATIAL_ROWS,
    SpatialDataset,
    make_spatial_dataset,
)
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

ROUTES = ["forward, turn left", "turn left, forward", "forward, turn right",
          "turn right, forward"]
# The existing spatial rows plus synthetic cases carrying the motion families' names.
ROWS = (*SPATIAL_ROWS,
        ("turn", "turn_direction", (0, 2, 4), "choice", None, "left",
         ["left", "right", "no turn"]),
        ("route", "route_sequence", (1, 3), "choice", None, "forward, turn left", ROUTES),
        ("disp", "camera_displacement_m", (0, 5), "number", "m", "2.0", None),
        ("ego", "egocentric_direction_deg", (0, 3), "number", None, "45", None))
FLIPPED = ["count", "turn", "route", "disp"]  # appearance order, relative/egocentric direction out
REPEATED = ["order", "count", "turn", "disp"]


def _ids(suffixes: list[str]) -> list[str]:
    return [f"spatial-{s}-{f}" for s, f, *_ in ROWS if s in suffixes]


def _urls(request: RecordedRequest) -> list[str]:
    content = request.body["messages"][-1]["content"]
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def _asked(requests: list[RecordedRequest], dataset: SpatialDataset,
           case: dict) -> list[RecordedRequest]:
    return [r for r in requests if dataset.marker(case["id"]) in message_text(r.body)]


def _run(dataset: SpatialDataset, out: Path, srv: OpenAICompatibleServer, **options: object):
    with client_for(srv.base_url) as client:
        return run_model(dataset.root, client, out, max_concurrency=3, describe=False,
                         **options)  # type: ignore[arg-type]


def test_the_covered_cases_are_asked_reversed_and_doubled_and_resumed(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds", rows=ROWS)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("left")) as srv:
        first = _run(dataset, out, srv, time_flips=True, repeat_frames=True)
        requests = list(srv.requests)
        again = _run(dataset, out, srv, time_flips=True, repeat_frames=True)
        assert again.calls_made == 0 and len(srv.requests) == len(requests)
        off = _run(dataset, out, srv)
        assert off.calls_made == 0
    assert not (out / "time_flips.jsonl").exists() and not (out / "repeat_frames.jsonl").exists()
    base = len(dataset.cases) + len(dataset.spatial)
    assert first.calls_made == len(requests) == base + len(FLIPPED) + len(REPEATED)
    flipped = [TimeControlRecord.model_validate(r)
               for r in read_jsonl(out / "time_flips.journal.jsonl")]
    repeated = [TimeControlRecord.model_validate(r)
                for r in read_jsonl(out / "repeat_frames.journal.jsonl")]
    # A journal is written as replies arrive (the controls' calls run several at a time).
    assert sorted(r.case_id for r in flipped) == sorted(_ids(FLIPPED))
    assert sorted(r.case_id for r in repeated) == sorted(_ids(REPEATED))
    assert all(r.control == "time_flip" for r in flipped)
    for case in dataset.spatial:
        urls = [image_data_url((dataset.root / i).read_bytes()) for i in case["images"]]
        shown = [_urls(r) for r in _asked(requests, dataset, case)]
        suffix = case["id"].split("-")[1]
        expected = [urls]
        if suffix in FLIPPED:
            expected.append(list(reversed(urls)))
        if suffix in REPEATED:
            expected.append([u for url in urls for u in (url, url)])
        assert sorted(shown) == sorted(expected), case["id"]
    route = next(r for r in flipped if "route" in r.case_id)
    # These four routes map onto each other reversed: shown in the case's own order.
    assert sorted(reverse_route(c) for c in ROUTES) == sorted(ROUTES)
    assert route.choices == ROUTES
    turn = next(r for r in flipped if "turn_direction" in r.case_id)
    assert turn.choices == ["left", "right", "no turn"] and turn.choice == "left"
    bodies = "".join(json.dumps(r.body) for r in requests)
    assert CANARY not in bodies and "labels" not in bodies
    assert CANARY not in (out / "time_flips.journal.jsonl").read_text()


def test_a_share_asks_a_fixed_subset_and_a_budget_counts_them(tmp_path: Path) -> None:
    rows = tuple(("t" + str(i), "path_length_m", (0, 1 + i % 5), "number", "m", "1.0", None)
                 for i in range(40))
    dataset = make_spatial_dataset(tmp_path / "ds", rows=rows)
    cases = [SpatialCase.model_validate(c) for c in dataset.spatial]
    drawn = time_control_cases(cases, "time_flip", share=0.5)
    assert 8 < len(drawn) < 32 and drawn == time_control_cases(cases, "time_flip", share=0.5)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("1.5 m")) as srv:
        _run(dataset, out, srv, time_flips=True, time_control_share=0.5)
        records = read_jsonl(out / "time_flips.jsonl")
        assert [r["case_id"] for r in records] == [c.id for c in drawn]
        original = {c.id: c for c in cases}
        assert all(r["images"] == list(reversed(original[r["case_id"]].images)) == c.images
                   for r, c in zip(records, drawn, strict=True))
        # Under a budget the re-asks are budgeted like the answers, and asked (issue 42).
        budgeted = _run(dataset, tmp_path / "budgeted", srv, time_flips=True,
                        price=Price(input_per_m=1.0, output_per_m=1.0), budget_usd=10.0)
        assert budgeted.calls_made == (len(dataset.cases) + len(dataset.spatial)
                                       + len(time_control_cases(cases, "time_flip")))
        assert (tmp_path / "budgeted" / "time_flips.jsonl").exists()
        with pytest.raises(ValueError, match="time_control_share"):
            _run(dataset, tmp_path / "bad", srv, time_flips=True, time_control_share=0.0)
        assert not (tmp_path / "bad" / "answers.jsonl").exists()


def test_the_local_random_model_journals_the_re_asks_and_reuses_them(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds", rows=ROWS)
    out = tmp_path / "run"
    spec = ModelSpec.model_validate({"name": "random", "serve": "random"})
    with open_model(spec) as client:
        first = run_model(dataset.root, client, out, max_concurrency=2, describe=False,
                          time_flips=True, repeat_frames=True)
    journalled = {name: read_jsonl(out / f"{name}.journal.jsonl")
                  for name in ("time_flips", "repeat_frames")}
    with open_model(spec) as client:
        again = run_model(dataset.root, client, out, max_concurrency=2, describe=False,
                          time_flips=True, repeat_frames=True)
    assert first.calls_made == (len(dataset.cases) + len(dataset.spatial) + len(FLIPPED)
                                + len(REPEATED))
    assert again.calls_made == 0 and again.skipped == first.calls_made
    for name, records in journalled.items():
        # Nothing new journalled; the standing file is the journal's records, reused.
        assert read_jsonl(out / f"{name}.journal.jsonl") == records
        assert read_jsonl(out / f"{name}.jsonl") == records
        assert all(r["status"] == "success" and r["content_sha256"] for r in records)
    flipped = journalled["time_flips"]
    route = next(r for r in flipped if "route" in r["case_id"])
    assert route["choice"] in route["choices"]  # the random model picks a shown choice


def test_vqa_run_asks_the_time_controls_unless_switched_off(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds", rows=ROWS)
    cli = CliRunner()
    base = ["vqa", "run", str(dataset.root), "--model", "random", "--no-describe",
            "--no-circular", "--no-flip"]
    plain = cli.invoke(app, [*base, "--output", str(tmp_path / "plain"), "--no-time-flip",
                             "--no-repeat-frames"])
    assert plain.exit_code == 0, plain.output
    assert not (tmp_path / "plain" / "time_flips.jsonl").exists()
    args = [*base, "--output", str(tmp_path / "timed")]  # on by default, as in the pipeline
    timed = cli.invoke(app, args)
    assert timed.exit_code == 0, timed.output
    calls = len(dataset.cases) + len(dataset.spatial) + len(FLIPPED) + len(REPEATED)
    assert f"{calls} calls made" in timed.output
    assert len(read_jsonl(tmp_path / "timed" / "time_flips.jsonl")) == len(FLIPPED)
    assert len(read_jsonl(tmp_path / "timed" / "repeat_frames.jsonl")) == len(REPEATED)
    bad = cli.invoke(app, [*args, "--time-control-share", "1.5"])
    assert bad.exit_code != 0 and "time-control-share" in bad.output
