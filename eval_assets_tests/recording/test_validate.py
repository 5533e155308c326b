"""Full validation: every row of every required stream, so one bad row is found at the door."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.codecs import encode_blob
from eval_assets.recording.validate import validate_recording


def _replace_blob(db: Path, stream: str, position: int, data: bytes) -> int:
    """Overwrite the blob of the ``position``-th row of ``stream`` (ts order); returns its id."""
    with Recording.open(db) as rec:
        row_id = int(rec._rows(stream)[0][position])
    with sqlite3.connect(db) as conn:
        conn.execute(f'UPDATE "{stream}_blob" SET data = ? WHERE id = ?', (data, row_id))
    return row_id


def test_the_sample_passes_with_its_inventory(sample_db: Path) -> None:
    checked = validate_recording(sample_db)
    assert checked.inventory.image_count == 24
    assert checked.inventory.recording == "sample"


def test_a_later_truncated_blob_is_found_and_named(tmp_path: Path, sample_db: Path) -> None:
    db = tmp_path / "late.db"
    shutil.copy(sample_db, db)
    with sqlite3.connect(db) as conn:
        (blob,) = conn.execute("SELECT data FROM pointlio_lidar_blob ORDER BY id LIMIT 1 "
                               "OFFSET 17").fetchone()
    row_id = _replace_blob(db, "pointlio_lidar", 17, blob[: len(blob) // 2])
    with Recording.open(db):
        pass  # the first message is fine: opening alone cannot see it
    with pytest.raises(RecordingError) as caught:
        validate_recording(db)
    assert caught.value.stream == "pointlio_lidar" and caught.value.row_id == row_id
    assert str(db) in str(caught.value) and "Fix:" in str(caught.value)


def test_an_undecodable_jpeg_is_found_and_named(tmp_path: Path, sample_db: Path) -> None:
    db = tmp_path / "badjpeg.db"
    shutil.copy(sample_db, db)
    with Recording.open(db) as rec:
        image = rec.message("color_image", 11)
    # A well-formed LCM Image whose JPEG bytes are garbage: only decoding the JPEG finds it.
    broken = type(image)(image.header, image.height, image.width, image.encoding,
                         image.is_bigendian, image.step, b"\xff\xd8" + b"\x00" * 500)
    _replace_blob(db, "color_image", 11, encode_blob(broken, "jpeg"))
    with pytest.raises(RecordingError, match=r"frame 11: .*not a decodable JPEG.*Fix:"):
        validate_recording(db)
