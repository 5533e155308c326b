"""Hand annotations attach to frames by image content, never by index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.errors import InputError
from eval_assets.layout import StorageLayout, default_annotations_dir
from eval_assets.scoring.inputs import load_annotations
from eval_assets_tests.scoring.conftest import FRAMES


@pytest.fixture
def dataset(sample_dataset: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_dataset, tmp_path / "datasets" / "sample"))


def _image(dataset: Path, frame: int) -> Path:
    return dataset / "assets" / f"frame-{frame:06d}.png"


def test_the_bundled_annotations_attach_to_the_frames_they_describe(dataset: Path) -> None:
    loaded = load_annotations(default_annotations_dir(), "sample", dataset)
    assert loaded is not None
    # The dataset has frames 0, 4 and 8; the annotations of 12, 16 and 20 match none of them.
    assert sorted(loaded.by_frame) == list(FRAMES)
    assert all(a.frame_index == i for i, a in loaded.by_frame.items())
    assert sorted(a.frame_index for a in loaded.unmatched) == [12, 16, 20]


def test_an_annotation_follows_its_image_and_is_dropped_when_the_image_changes(
        dataset: Path, tmp_path: Path) -> None:
    folder = tmp_path / "annotations"
    folder.mkdir()
    shutil.copy(default_annotations_dir() / "sample.jsonl", folder / "sample.jsonl")
    first, second, third = (_image(dataset, i) for i in FRAMES)
    # The recording was replaced: frames 0 and 4 swapped places, frame 8 shows something else.
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    third.write_bytes(third.read_bytes() + b"\0")
    loaded = load_annotations(folder, "sample", dataset)
    assert loaded is not None
    assert {i: a.frame_index for i, a in loaded.by_frame.items()} == {0: 4, 4: 0}
    assert 8 in {a.frame_index for a in loaded.unmatched} and 8 not in loaded.by_frame


def test_an_index_keyed_file_is_refused_until_migrated(dataset: Path, tmp_path: Path) -> None:
    folder = tmp_path / "annotations"
    folder.mkdir()
    path = folder / "sample.jsonl"
    rows = [json.loads(line) for line in
            (default_annotations_dir() / "sample.jsonl").read_text().splitlines()][:3]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "image_sha256"})
                            + "\n" for r in rows))
    with pytest.raises(InputError, match="migrate-annotations --recording sample"):
        load_annotations(folder, "sample", dataset)
    layout = StorageLayout(tmp_path / "home")
    shutil.copytree(dataset, layout.dataset_dir("sample"))
    out = CliRunner().invoke(app, ["labels", "migrate-annotations", "--recording", "sample",
                                   "--storage-root", str(layout.root), "--annotations-dir",
                                   str(folder)])
    assert out.exit_code == 0, out.output
    assert "3 annotations keyed" in out.output
    loaded = load_annotations(folder, "sample", dataset)
    assert loaded is not None and sorted(loaded.by_frame) == list(FRAMES)
    # The bundled file was migrated the same way: same hashes for the same frames.
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows
    # One image annotated twice is an error naming the file.
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(InputError, match="annotated twice"):
        load_annotations(folder, "sample", dataset)


def test_dropped_annotations_are_listed_in_the_report_with_their_frames(
        dataset: Path, tmp_path: Path) -> None:
    from eval_assets.report.html import render_report
    from eval_assets.report.leaderboard import build_leaderboard
    from eval_assets.scoring.inputs import unmatched_annotations
    from eval_assets_tests.report.builders import result, row

    folder = tmp_path / "annotations"
    folder.mkdir()
    shutil.copy(default_annotations_dir() / "sample.jsonl", folder / "sample.jsonl")
    layout = StorageLayout(tmp_path / "home")
    published = Path(shutil.copytree(dataset, layout.dataset_dir("sample")))
    # The recording changed: frame 8 now shows something else, so its annotation is dropped.
    third = _image(published, FRAMES[2])
    third.write_bytes(third.read_bytes() + b"\0")
    dropped = unmatched_annotations(folder, ["sample", "no-dataset"], layout)
    assert list(dropped) == ["sample"]
    assert sorted(a.frame_index for a in dropped["sample"].unmatched) == [8, 12, 16, 20]

    cells = [result("sample", "m", [row("c0", "presence", "yes", "yes", "sample")])]
    page = render_report(build_leaderboard(cells), cells, [], "t", dropped_annotations=dropped)
    body = page.split('id="not-computed"', 1)[1].split("</section>", 1)[0]
    assert "4 annotations not used (annotated frame_index 8, 12, 16, 20)" in body
    assert str(folder / "sample.jsonl") in body and "Fix: annotate the current frames" in body
    # Without the list, the section says nothing of them.
    plain = render_report(build_leaderboard(cells), cells, [], "t")
    assert "annotations not used" not in plain
