"""Every file a dataset names stays inside it: links leading out are refused before any request,
and a malformed ``cases.jsonl`` is bad input (exit 2) with or without ``--output``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, make_dataset, write_png

runner = CliRunner()
SECRET = b"SECRET-BYTES-OUTSIDE-THE-DATASET"


def _outside_png(tmp_path: Path) -> Path:
    """A PNG outside the dataset, with a marker in its bytes to look for on the wire."""
    path = tmp_path / "elsewhere" / "private.png"
    png = write_png(path, seed=9)
    path.write_bytes(png + SECRET)  # still a PNG to read_png: trailing bytes after IEND
    return path


def _run(dataset: Path, srv: OpenAICompatibleServer, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["vqa", "run", str(dataset), "--model", "org/vlm",
                                 "--base-url", srv.base_url, *ONE_CALL_PER_CASE, *extra])
    return result.exit_code, result.output


def _assert_nothing_sent(srv: OpenAICompatibleServer) -> None:
    assert srv.requests == [] and srv.probes == []


@pytest.mark.parametrize("with_output", [True, False])
def test_an_asset_linked_outside_the_dataset_is_refused_before_any_request(
        tmp_path: Path, with_output: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_HOME", str(tmp_path / "home"))
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    linked = dataset.root / "assets" / "frame-000200.png"
    linked.unlink()
    linked.symlink_to(_outside_png(tmp_path))
    extra = ("--output", str(tmp_path / "run")) if with_output else ()
    with OpenAICompatibleServer(default=Reply("yes"), models=["org/vlm"]) as srv:
        code, output = _run(dataset.root, srv, *extra)
        _assert_nothing_sent(srv)
    assert code == 2, output
    flat = " ".join(output.split())
    assert "cases.jsonl:3" in flat and "field 'image'" in flat
    assert "outside" in flat and "private.png" in flat and "copy the file" in flat
    assert not (tmp_path / "run").exists()


def test_an_assets_folder_linked_outside_is_refused(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    moved = tmp_path / "elsewhere" / "assets"
    moved.parent.mkdir()
    (dataset.root / "assets").rename(moved)
    (dataset.root / "assets").symlink_to(moved, target_is_directory=True)
    with OpenAICompatibleServer(default=Reply("yes"), models=["org/vlm"]) as srv:
        code, output = _run(dataset.root, srv, "--output", str(tmp_path / "run"))
        _assert_nothing_sent(srv)
    assert code == 2 and "outside" in output, output


def test_a_link_inside_assets_is_followed(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    original = dataset.root / "assets" / "frame-000100.png"
    moved = dataset.root / "assets" / "originals" / "a.png"
    moved.parent.mkdir()
    original.rename(moved)
    original.symlink_to(moved)
    with OpenAICompatibleServer(default=Reply("yes"), models=["org/vlm"]) as srv:
        code, output = _run(dataset.root, srv, "--output", str(tmp_path / "run"),
                            "--no-describe")
        assert len(srv.requests) == 1
    assert code == 0, output


def test_a_spatial_case_image_linked_outside_is_refused(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=1)
    (dataset.root / "assets" / "leak.png").symlink_to(_outside_png(tmp_path))
    spatial = {"id": "s1", "images": ["assets/frame-000100.png", "assets/leak.png"],
               "question": "How many?", "answer_type": "number"}
    (dataset.root / "spatial_cases.jsonl").write_text(json.dumps(spatial) + "\n")
    with OpenAICompatibleServer(default=Reply("yes"), models=["org/vlm"]) as srv:
        code, output = _run(dataset.root, srv, "--output", str(tmp_path / "run"))
        _assert_nothing_sent(srv)
    flat = " ".join(output.split())
    assert code == 2 and "spatial_cases.jsonl:1" in flat and "field 'images.1'" in flat, output


@pytest.mark.parametrize("with_output", [True, False])
def test_a_malformed_cases_file_exits_2_naming_file_line_field_and_fix(
        tmp_path: Path, with_output: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_HOME", str(tmp_path / "home"))
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    lines = (dataset.root / "cases.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    del bad["choices"]
    (dataset.root / "cases.jsonl").write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    extra = ("--output", str(tmp_path / "run")) if with_output else ()
    with OpenAICompatibleServer(default=Reply("yes"), models=["org/vlm"]) as srv:
        code, output = _run(dataset.root, srv, *extra)
        _assert_nothing_sent(srv)
    flat = " ".join(output.split())
    assert code == 2, output
    assert "cases.jsonl:2" in flat and "field 'choices'" in flat and "regenerate" in flat
    assert "ValueError" not in flat


def test_each_image_is_checked_once_per_read_and_a_missing_one_at_its_first_line(
        tmp_path: Path) -> None:
    from eval_assets.model_runs.public_cases import image_checker, load_public_cases

    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=3)
    check = image_checker()
    first = check(dataset.root, "assets/frame-000200.png", "cases.jsonl:4")
    (dataset.root / "assets" / "frame-000200.png").unlink()
    # The same read does not look again (the demo names 24 images from 790 cases) ...
    assert check(dataset.root, "assets/frame-000200.png", "cases.jsonl:5") == first
    # ... and a new read reports the missing file at the first case naming it.
    with pytest.raises(FileNotFoundError, match=r"cases\.jsonl:4: image 'assets/frame-000200"):
        load_public_cases(dataset.root)
