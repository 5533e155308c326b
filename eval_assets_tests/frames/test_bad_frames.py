"""One bad frame is not fatal: it is skipped with its reason, the rest make the dataset.

The recordings are real (written by the project's writer) and then damaged row by row: an
undecodable JPEG, a missing and a corrupt payload, an unreadable calibration, a row written twice,
two images sharing a timestamp, a frame before the first calibration.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames import (
    FramePreparationError,
    FrameSelectionConfig,
    PreparedFrames,
    TooManyBadFramesError,
    build_pointcloud_frames,
    build_rectified_frames,
    plan_indices,
    plan_selection,
    prepare_rectified_frames,
    read_rectified_frames,
    read_selection_record,
    read_skipped_frames,
)
from eval_assets.perception import PerceptionConfig
from eval_assets.recording import Recording
from eval_assets.schemas.frames import SKIPPED_FRAMES_FILE
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage

W, H = 160, 120
GOOD = [0, 1, 3, 5, 7, 9]
EXPECTED = [  # (frame, stream, reason, counts as bad)
    (2, "color_image", "undecodable_image", True),
    (4, "color_image", "missing_blob", True),
    (6, "color_image", "corrupt_blob", True),
    (8, "color_image", "duplicate_row", False),
    (10, "camera_info", "bad_calibration", True),
]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """Ten frames, then: frame 2 garbage JPEG, 4 no payload, 6 truncated payload, a copy of
    frame 7 (becomes frame 8; old 8, 9 become 9, 10), frame 10's camera_info truncated.
    Returns the file and the row id at fault per frame."""
    db = make_recording(tmp_path_factory.mktemp("bad") / "damaged.db", n_frames=10, width=W,
                        height=H)
    rows = {2: damage.undecodable_jpeg(db, 2), 4: damage.missing_blob(db, "color_image", 4),
            6: damage.truncated_blob(db, "color_image", 6), 8: damage.duplicate_image(db, 7)}
    rows[10] = damage.truncated_blob(db, "camera_info", 9)  # the calibration of new frame 10
    return db, rows


def _skips(prepared_or_list: PreparedFrames | list) -> list[tuple[int, str, str, bool]]:
    skipped = getattr(prepared_or_list, "skipped", prepared_or_list)
    return [(s.frame_index, s.stream, s.reason, s.counts_as_bad) for s in skipped]


def test_bad_frames_are_skipped_with_file_stream_row_reason_and_fix(damaged, tmp_path: Path
                                                                    ) -> None:
    db, rows = damaged
    with Recording.open(db) as rec:
        plan = plan_selection(rec, FrameSelectionConfig(max_bad_fraction=0.5))
        prepared = prepare_rectified_frames(rec, tmp_path, plan)
    assert [f.frame_index for f in prepared.frames] == GOOD
    assert [f.frame_index for f in read_rectified_frames(tmp_path)] == GOOD
    assert _skips(prepared) == EXPECTED
    stored = read_skipped_frames(tmp_path)
    assert stored == prepared.skipped
    for skip in stored:
        assert skip.recording == str(db) and skip.row_id == rows[skip.frame_index]
        assert skip.fix and skip.detail and skip.image_ts > 0
    by_frame = {s.frame_index: s for s in stored}
    assert "not a decodable JPEG" in by_frame[2].detail
    assert "has no payload in 'color_image_blob'" in by_frame[4].detail
    assert "payload does not decode" in by_frame[6].detail
    assert "repeats frame 7" in by_frame[8].detail and "first copy is used" in by_frame[8].fix
    assert "uses camera_info message 9, which does not decode" in by_frame[10].detail
    # 4 bad of 10 frames (the identical copy is not a frame of its own)
    assert (prepared.share.bad, prepared.share.frames, prepared.share.fraction) == (4, 10, 0.4)
    assert read_selection_record(tmp_path).selected == list(range(11))
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == [
        f"frame-{i:06d}.png" for i in GOOD]


def test_too_many_bad_frames_fail_with_the_breakdown(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    (tmp_path / "frames.parquet").write_bytes(b"from an earlier run")
    with Recording.open(db) as rec, pytest.raises(TooManyBadFramesError) as caught:
        prepare_rectified_frames(rec, tmp_path, plan_selection(rec, FrameSelectionConfig()))
    message = str(caught.value)
    assert message.startswith(f"{db}: 4 of 10 examined frames are bad (40% > max_bad_fraction "
                              "0.2): 1 bad_calibration, 1 corrupt_blob, 1 missing_blob, "
                              "1 undecodable_image. First: frame 2 (color_image row id")
    assert "or raise max_bad_fraction in a damaged.selection.yaml beside the recording" in message
    assert str(tmp_path / SKIPPED_FRAMES_FILE) in message
    # No table to read downstream; the diagnosis is on disk.
    assert not (tmp_path / "frames.parquet").exists()
    assert len(read_skipped_frames(tmp_path)) == 5


def test_only_selected_frames_are_examined(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    with Recording.open(db) as rec:
        prepared = prepare_rectified_frames(rec, tmp_path, plan_selection(
            rec, FrameSelectionConfig(start=3, stop=9, stride=2)))  # frames 3, 5, 7
        assert prepared.skipped == [] and [f.frame_index for f in prepared.frames] == [3, 5, 7]
        one_bad = plan_selection(rec, FrameSelectionConfig(image_index=4))
        with pytest.raises(TooManyBadFramesError, match=r"1 of 1 examined frames are bad"):
            prepare_rectified_frames(rec, tmp_path / "one", one_bad)


def test_a_quality_window_never_picks_a_bad_frame(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    with Recording.open(db) as rec:
        plan = plan_selection(rec, FrameSelectionConfig(quality_window=0.25, max_bad_fraction=1))
        # The scan found the undecodable, missing and corrupt images (and the copy) up front.
        assert _skips(plan.skipped) == sorted(EXPECTED[:4], key=lambda s: (s[2] != "duplicate_row",
                                                                          s[0]))
        assert not {2, 4, 6, 8} & set(plan.record.selected)
        assert plan.record.examined == 11
        prepared = prepare_rectified_frames(rec, tmp_path, plan)
    # Frame 10's calibration is only read when it is rectified.
    assert _skips(prepared) == EXPECTED
    assert [f.frame_index for f in prepared.frames] == [i for i in plan.record.selected if i != 10]


def test_same_timestamp_different_images_and_no_calibration_yet(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "stamps.db", n_frames=6, width=W, height=H)
    damage.duplicate_image(db, 3, payload_from=5)  # new frame 4, same ts as frame 3
    with sqlite3.connect(db) as conn:  # the first calibration is gone: frame 0 has none
        conn.execute("DELETE FROM camera_info WHERE id = 1")
    with Recording.open(db) as rec:
        prepared = prepare_rectified_frames(rec, tmp_path / "out", plan_selection(
            rec, FrameSelectionConfig(max_bad_fraction=0.5)))
    assert _skips(prepared) == [(0, "camera_info", "no_calibration", True),
                                (3, "color_image", "duplicate_timestamp", True),
                                (4, "color_image", "duplicate_timestamp", True)]
    assert prepared.skipped[0].row_id is None
    assert "select frames from index 1 on" in prepared.skipped[0].detail
    assert [f.frame_index for f in prepared.frames] == [1, 2, 5, 6]


def test_the_strict_builder_still_raises(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    with Recording.open(db) as rec:
        assert len(build_rectified_frames(rec, tmp_path / "ok", GOOD)) == len(GOOD)
        with pytest.raises(FramePreparationError, match=r"damaged.db: frame 2: Image data"):
            build_rectified_frames(rec, tmp_path / "bad", [1, 2])
        with pytest.raises(FramePreparationError, match=r"none of the 1 selected frames"):
            prepare_rectified_frames(rec, tmp_path / "none", plan_indices(
                rec, [2], FrameSelectionConfig(max_bad_fraction=1)))


def test_a_damaged_lidar_sweep_or_tf_row_costs_only_lidar_evidence(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "lidar.db", n_frames=5, width=W, height=H)
    lidar_row = damage.truncated_blob(db, "pointlio_lidar", 2)
    damage.missing_blob(db, "tf", 4)  # one of frame 1's three TF edges
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, tmp_path / "rect")
        clouds = build_pointcloud_frames(rec, frames, tmp_path / "clouds")
    assert [c.status for c in clouds] == ["ok", "ok", "image_only", "ok", "ok"]
    assert clouds[2].reason.startswith(
        f"the nearest LiDAR message does not decode: stream 'pointlio_lidar' row id {lidar_row}")
    assert sorted(p.name for p in (tmp_path / "clouds" / "points").iterdir()) == [
        f"frame-{i:06d}.npz" for i in (0, 1, 3, 4)]


def test_the_dataset_is_made_from_the_remaining_frames(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    models = PerceptionConfig()
    seen: list[PreparedFrames] = []
    summary = generate_from_recording(
        db, tmp_path / "dataset", FrameSelectionConfig(max_bad_fraction=0.5), AuthorConfig(),
        models.build_detector(), models.build_segmenter(), on_frames=seen.append)
    assert summary.num_cases > 0
    run = json.loads((tmp_path / "dataset" / "audit" / "run.json").read_text())
    assert run["frame_indices"] == GOOD
    assert _skips(seen[0]) == EXPECTED
    assert [s["frame_index"] for s in run["skipped_frames"]] == [s.frame_index
                                                                 for s in seen[0].skipped]
    assert all(s["reason"] and s["fix"] for s in run["skipped_frames"])
    cases = [json.loads(line) for line in (tmp_path / "dataset" / "cases.jsonl").read_text()
             .splitlines()]
    assert {c["image"] for c in cases} <= {f"assets/frame-{i:06d}.png" for i in GOOD}


def test_cli_lists_every_skipped_frame(damaged, tmp_path: Path) -> None:
    db, _ = damaged
    local = tmp_path / "damaged.db"
    shutil.copy(db, local)
    runner = CliRunner()
    failed = runner.invoke(app, ["vqa", "generate", str(local), "--output", str(tmp_path / "a")])
    assert failed.exit_code == 2
    assert "4 of 10 examined frames are bad" in failed.output
    (tmp_path / "damaged.selection.yaml").write_text("max_bad_fraction: 0.5\nstop: 8\n")
    ok = runner.invoke(app, ["vqa", "generate", str(local), "--output", str(tmp_path / "b")])
    assert ok.exit_code == 0, ok.output
    assert "selected 8 of 11 frames: every frame of [0, 8)" in ok.output
    assert "skipped 3 frames (3 bad of 8, limit 0.5):" in ok.output
    assert "frame 2 (color_image row id" in ok.output and "undecodable_image" in ok.output
    assert "frame 4 (color_image row id" in ok.output and "Fix: the recording is incomplete" \
        in ok.output
    # Options replace the file's selection, not its max_bad_fraction.
    opts = runner.invoke(app, ["vqa", "generate", str(local), "--start", "3", "--stop", "9",
                               "--stride", "2", "--output", str(tmp_path / "c")])
    assert opts.exit_code == 0, opts.output
    assert "selected 3 of 11 frames: every 2. frame of [3, 9) (3, 5, 7)" in opts.output
    quality = runner.invoke(app, ["vqa", "generate", str(local), "--quality-window", "0.5",
                                  "--min-brightness", "0.1", "--max-bad-fraction", "0.6",
                                  "--output", str(tmp_path / "d")])
    assert quality.exit_code == 0, quality.output
    assert "the sharpest frame per 0.5 s window of [0, 11) brighter than 0.1" in quality.output
    both = runner.invoke(app, ["vqa", "generate", str(local), "--stride", "2",
                               "--time-step", "1", "--output", str(tmp_path / "e")])
    assert both.exit_code == 2 and "stride and time_step cannot be combined" in both.output
