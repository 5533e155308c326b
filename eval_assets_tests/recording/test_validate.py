"""Validation at the door: structural problems are fatal, damaged rows are reported, not raised."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.validate import find_duplicate_images, validate_recording
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage


@pytest.fixture
def copy(tmp_path: Path, sample_db: Path) -> Path:
    db = tmp_path / "copy.db"
    shutil.copy(sample_db, db)
    return db


def test_the_sample_passes_with_its_inventory(sample_db: Path) -> None:
    checked = validate_recording(sample_db)
    assert checked.inventory.image_count == 24
    assert checked.inventory.recording == "sample"
    assert checked.problems == () and checked.summary() == ""


def test_damaged_payloads_do_not_refuse_the_recording(copy: Path) -> None:
    # Decoding every row decides nothing any more: the frame stage skips what it cannot read.
    damage.truncated_blob(copy, "pointlio_lidar", 17)
    damage.undecodable_jpeg(copy, 11)
    checked = validate_recording(copy)
    assert checked.inventory.image_count == 24 and checked.problems == ()


def test_missing_payloads_are_reported_with_stream_row_and_position(copy: Path) -> None:
    image_row = damage.missing_blob(copy, "color_image", 9)
    tf_row = damage.missing_blob(copy, "tf", 3)
    checked = validate_recording(copy)
    assert [(p.stream, p.row_id, p.position, p.kind) for p in checked.problems] == [
        ("color_image", image_row, 9, "missing_blob"), ("tf", tf_row, 3, "missing_blob")]
    assert "has no payload in 'color_image_blob'" in checked.problems[0].detail
    assert checked.summary() == "1 color_image missing_blob, 1 tf missing_blob"


def test_duplicate_rows_and_timestamps_are_told_apart(copy: Path) -> None:
    copy_row = damage.duplicate_image(copy, 5)  # identical copy: new frame 6, later ones shift

    with Recording.open(copy) as rec:
        original_12 = rec.row_id("color_image", 12)
    other_row = damage.duplicate_image(copy, 12, payload_from=20)  # a different image: frame 13
    checked = validate_recording(copy)
    assert checked.inventory.image_count == 26
    assert [(p.position, p.kind, p.row_id) for p in checked.problems] == [
        (6, "duplicate_row", copy_row), (12, "duplicate_timestamp", original_12),
        (13, "duplicate_timestamp", other_row)]
    by_position = {p.position: p for p in checked.problems}
    assert "repeats frame 5" in by_position[6].detail and "frame 5 is kept" in by_position[6].detail
    assert "with frames [13]" in by_position[12].detail
    assert checked.summary() == "1 color_image duplicate_row, 2 color_image duplicate_timestamp"


def test_duplicates_are_only_looked_up_where_asked(copy: Path) -> None:
    damage.duplicate_image(copy, 5)
    with Recording.open(copy) as rec:
        assert find_duplicate_images(rec, [0, 1, 2]) == {}
        assert list(find_duplicate_images(rec, [5])) == [6]


def test_structural_problems_stay_fatal(tmp_path: Path) -> None:
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_bytes(b"not a database")
    with pytest.raises(RecordingError, match=r"notes\.db: not a readable SQLite recording"):
        validate_recording(not_sqlite)
    no_lidar = make_recording(tmp_path / "nolidar.db", omit=("pointlio_lidar", "lidar"))
    with pytest.raises(RecordingError, match=r"stream 'pointlio_lidar or lidar' is missing"):
        validate_recording(no_lidar)
    no_calibration = make_recording(tmp_path / "nocal.db", empty=("camera_info",))
    with pytest.raises(RecordingError, match=r"stream 'camera_info' is empty"):
        validate_recording(no_calibration)
    unreadable = make_recording(tmp_path / "badcal.db")
    with sqlite3.connect(unreadable) as conn:  # no camera_info row decodes: no calibration at all
        conn.execute("UPDATE camera_info_blob SET data = substr(data, 1, 20)")
    with pytest.raises(RecordingError, match=r"stream 'camera_info' row id 1: payload does not "
                                             r"decode.*Fix:"):
        validate_recording(unreadable)
