"""Decompression bombs: an image's size is read from its header and checked before it is
decoded; an image over the limit is one skipped frame with its reason, never the recording's end
(before: a 1.2 MB PNG of 20000×20000 pixels took 2.5 GB)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames.admission import admit_recording
from eval_assets.model_runs.flips import mirror_png
from eval_assets.model_runs.spatial import mosaic_png
from eval_assets.recording.image_size import (
    ImageTooLargeError,
    check_decode_size,
    compressed_dimensions,
)
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage

W, H = 160, 120


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width``×``height`` (valid IHDR with its CRC), without its pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk
            + struct.pack(">I", zlib.crc32(chunk)))


def _encoded(ext: str, width: int, height: int, *params: int) -> bytes:
    ok, buf = cv2.imencode(ext, np.zeros((height, width, 3), np.uint8), list(params))
    assert ok
    return buf.tobytes()


@pytest.mark.parametrize("data", [
    _encoded(".png", 37, 21), _encoded(".jpg", 37, 21),
    _encoded(".jpg", 37, 21, cv2.IMWRITE_JPEG_PROGRESSIVE, 1),
])
def test_the_header_gives_the_size(data: bytes) -> None:
    assert compressed_dimensions(data)[1:] == (37, 21)  # type: ignore[index]


def test_unknown_or_damaged_headers_leave_it_to_the_decoder() -> None:
    assert compressed_dimensions(b"GIF89a....") is None
    assert compressed_dimensions(b"\xff\xd8" + b"\x00" * 50) is None


def test_the_issue_s_bomb_is_refused_by_its_header() -> None:
    with pytest.raises(ImageTooLargeError) as refused:
        check_decode_size(_png_header_only(20000, 20000), "frame 3")
    message = str(refused.value)
    assert message.startswith("frame 3 is a 20000x20000 PNG (400 megapixels")
    assert "over the decode limit of 64 megapixels" in message and "1.2 GB as RGB" in message
    assert check_decode_size(_encoded(".png", 8000, 10)) == ("PNG", 8000, 10)


def test_an_oversized_frame_is_skipped_with_its_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A limit just above the recording's 160x120 frames, and frame 2 a 200x200 PNG: the bomb's
    # path, without allocating gigabytes should the guard be missing.
    monkeypatch.setenv("EVAL_ASSETS_MAX_IMAGE_PIXELS", "20000")
    db = make_recording(tmp_path / "bomb.db", n_frames=6, width=W, height=H)
    damage.replace_image_data(db, 2, _encoded(".png", 200, 200))
    admit_recording(db)  # one frame of six: within max_bad_fraction, not the recording's end

    result = CliRunner().invoke(app, ["vqa", "generate", str(db), "--output",
                                      str(tmp_path / "ds")])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, text
    assert "skipped 1 frames (1 bad of 6" in text
    assert ("frame 2 (color_image row id 3): image_too_large: frame 2: Image data (160x120 by "
            "its header) is a 200x200 PNG (0.04 megapixels in") in text, text
    assert "over the decode limit of 0.02 megapixels" in text
    assert "Fix: record images at the camera's resolution" in text


def test_dataset_images_are_checked_before_mirroring_or_tiling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_MAX_IMAGE_PIXELS", "20000")
    small, large = _encoded(".png", 100, 100), _encoded(".png", 200, 200)
    assert compressed_dimensions(mirror_png(small)) == ("PNG", 100, 100)
    with pytest.raises(ImageTooLargeError, match="the case's image is a 200x200 PNG"):
        mirror_png(large)
    with pytest.raises(ImageTooLargeError, match="frame 2 of a mosaic is a 200x200 PNG"):
        mosaic_png([small, large])
