"""Stored perception evidence: round trip, byte-identical reruns, refusal of inconsistent input."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from eval_assets.perception import default_vocabulary
from eval_assets.perception.box_segmenters import GrabCutSegmenter, RegionSegmenter
from eval_assets.perception.color_detector import ColorShapeDetector
from eval_assets.perception.evidence_io import (
    DETECTIONS_TABLE,
    build_detections,
    frame_json_relpath,
    load_mask,
    mask_relpath,
    read_detections,
    write_detections_table,
    write_frame_detections,
)
from eval_assets.perception.protocols import detect_and_segment
from eval_assets.schemas.perception import Detection, FrameDetections
from eval_assets_tests.perception.conftest import RectifiedSample

SUBSET = 4  # frames used where a full run adds time but no coverage


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_round_trip_keeps_every_field_and_mask(rectified_sample: RectifiedSample,
                                               tmp_path: Path) -> None:
    frames = rectified_sample.frames[:SUBSET]
    names = default_vocabulary()
    stored = build_detections(rectified_sample.frames_dir, frames, tmp_path, names,
                              ColorShapeDetector(), RegionSegmenter())
    assert read_detections(tmp_path) == stored
    assert [f.frame_index for f in stored] == [f.frame_index for f in frames]
    for record, image in zip(stored, rectified_sample.images, strict=False):
        assert record.queried_names == names
        found = detect_and_segment(image, names, ColorShapeDetector(), RegionSegmenter())
        assert [d.model_copy(update={"mask_path": None}) for d in record.detections] == \
            [d for d, _ in found]
        for i, (det, (_, mask)) in enumerate(zip(record.detections, found, strict=True)):
            assert det.mask_path == mask_relpath(record.frame_index, i)
            assert det.detector == "color_shape" and det.segmenter == "box_region"
            assert det.detector_version == ColorShapeDetector.version
            assert det.segmenter_version == RegionSegmenter.version
            assert np.array_equal(load_mask(tmp_path, det), mask)
            assert det.mask_area == int(mask.sum())
        on_disk = FrameDetections.model_validate_json(
            (tmp_path / frame_json_relpath(record.frame_index)).read_text())
        assert on_disk == record
    table = pq.read_table(tmp_path / DETECTIONS_TABLE)
    assert table.num_rows == SUBSET
    assert table.schema.names == ["frame_index", "width", "height", "queried_names",
                                  "detections", "unsure_names"]


@pytest.mark.slow
def test_two_runs_write_identical_bytes_even_in_another_process(
        rectified_sample: RectifiedSample, tmp_path: Path) -> None:
    frames = rectified_sample.frames[:SUBSET]
    names = default_vocabulary()
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out in (first, second):
        build_detections(rectified_sample.frames_dir, frames, out, names, ColorShapeDetector(),
                         GrabCutSegmenter())
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from eval_assets.frames import read_rectified_frames\n"
        "from eval_assets.perception import default_vocabulary\n"
        "from eval_assets.perception.box_segmenters import GrabCutSegmenter\n"
        "from eval_assets.perception.color_detector import ColorShapeDetector\n"
        "from eval_assets.perception.evidence_io import build_detections\n"
        "frames_dir, out, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])\n"
        "build_detections(frames_dir, read_rectified_frames(frames_dir)[:n], out, "
        "default_vocabulary(), ColorShapeDetector(), GrabCutSegmenter())\n"
    )
    subprocess.run([sys.executable, "-c", script, str(rectified_sample.frames_dir), str(third),
                    str(SUBSET)], check=True, timeout=120, env={**os.environ})
    files = _files(first)
    assert any(name.startswith("masks/") for name in files)
    assert DETECTIONS_TABLE in files
    assert _files(second) == files
    assert _files(third) == files


def test_rerun_with_fewer_detections_removes_stale_files(rectified_sample: RectifiedSample,
                                                         tmp_path: Path) -> None:
    frames = rectified_sample.frames[:2]
    build_detections(rectified_sample.frames_dir, frames, tmp_path, default_vocabulary(),
                     ColorShapeDetector(), RegionSegmenter())
    many = len(list((tmp_path / "masks").iterdir()))
    stored = build_detections(rectified_sample.frames_dir, frames[:1], tmp_path, ["red ball"],
                              ColorShapeDetector(), RegionSegmenter())
    kept = sorted(p.name for p in (tmp_path / "masks").iterdir())
    assert many > len(kept) == len(stored[0].detections) >= 1
    assert kept == sorted(Path(d.mask_path or "").name for d in stored[0].detections)
    assert [p.name for p in (tmp_path / "frames").iterdir()] == ["frame-000000.json"]
    assert read_detections(tmp_path) == stored


def test_pruning_leaves_another_writers_files_in_flight_alone(rectified_sample: RectifiedSample,
                                                              tmp_path: Path) -> None:
    # Another process's atomic write of a mask, between its write and its rename: removing the
    # temporary file made that process fail with a raw "No such file" on its name.
    in_flight = tmp_path / "masks" / ".frame-000021-01.png.k3j2x9.tmp"
    in_flight.parent.mkdir(parents=True)
    in_flight.write_bytes(b"half a png")
    stale = tmp_path / "masks" / "frame-000099-00.png"
    stale.write_bytes(b"an earlier run's mask")
    # A temporary file an hour old is the leftover of an interrupted write: it goes.
    leftover = tmp_path / "masks" / ".frame-000007-00.png.a1b2c3.tmp"
    leftover.write_bytes(b"interrupted")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    build_detections(rectified_sample.frames_dir, rectified_sample.frames[:1], tmp_path,
                     ["red ball"], ColorShapeDetector(), RegionSegmenter())
    assert in_flight.read_bytes() == b"half a png"
    assert not stale.exists() and not leftover.exists()


def _detection(name: str = "red ball", area: int = 4) -> Detection:
    return Detection(name=name, label_index=0, box_xyxy=(1.0, 1.0, 3.0, 3.0), score=0.9,
                     mask_area=area, mask_path=None, detector="d", detector_version="1",
                     segmenter="s", segmenter_version="1")


def test_inconsistent_masks_are_refused(tmp_path: Path) -> None:
    frame = FrameDetections(frame_index=3, width=8, height=6, queried_names=["red ball"],
                            detections=[_detection()])
    mask = np.zeros((6, 8), dtype=bool)
    mask[1:3, 1:3] = True
    with pytest.raises(ValueError, match="1 detections but 0 masks"):
        write_frame_detections(tmp_path, frame, [])
    with pytest.raises(ValueError, match="shape"):
        write_frame_detections(tmp_path, frame, [mask[:5]])
    with pytest.raises(ValueError, match="mask_area is 4"):
        write_frame_detections(tmp_path, frame, [np.ones((6, 8), dtype=bool)])
    stored = write_frame_detections(tmp_path, frame, [mask])
    assert stored.detections[0].mask_path == "masks/frame-000003-00.png"
    write_detections_table(tmp_path, [stored])
    assert np.array_equal(load_mask(tmp_path, stored.detections[0]), mask)


def test_records_validate_labels_and_boxes() -> None:
    with pytest.raises(ValueError, match="label_index"):
        FrameDetections(frame_index=0, width=8, height=6, queried_names=["blue box"],
                        detections=[_detection("red ball")])
    with pytest.raises(ValueError, match="x0 < x1"):
        Detection(name="a", label_index=0, box_xyxy=(3.0, 1.0, 3.0, 2.0), score=0.5,
                  mask_area=0, mask_path=None, detector="d", detector_version="1",
                  segmenter="s", segmenter_version="1")
    frame = FrameDetections(frame_index=0, width=8, height=6,
                            queried_names=["blue box", "red ball"],
                            detections=[_detection().model_copy(update={"label_index": 1})])
    assert frame.detections_of("blue box") == []
    assert len(frame.detections_of("red ball")) == 1
    with pytest.raises(ValueError, match=r"unsure_names \['green ball'\] were not queried"):
        FrameDetections(frame_index=0, width=8, height=6, queried_names=["blue box"],
                        detections=[], unsure_names=["green ball"])


def test_missing_or_foreign_table_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="detections_masks"):
        read_detections(tmp_path)
    pq.write_table(pq.read_table(_foreign_table(tmp_path)), tmp_path / DETECTIONS_TABLE)
    with pytest.raises(ValueError, match="rematerialize detections_masks"):
        read_detections(tmp_path)
    with pytest.raises(FileNotFoundError, match="rematerialize"):
        load_mask(tmp_path, _detection().model_copy(update={"mask_path": "masks/nope.png"}))


def _foreign_table(tmp_path: Path) -> Path:
    import pyarrow as pa

    path = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"frame_index": [0], "boxes": [[1.0]]}), path)
    return path


def test_no_names_is_an_error(rectified_sample: RectifiedSample, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="vocabulary"):
        build_detections(rectified_sample.frames_dir, rectified_sample.frames[:1], tmp_path, [],
                         ColorShapeDetector(), RegionSegmenter())
