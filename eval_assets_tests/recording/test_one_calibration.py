"""One recording, one calibration (issue 42): intrinsics or distortion that change within a
recording are refused at the door and by the frame stage of ``vqa generate``, naming the file,
the frame and time, the field and the fix; a calibration republished unchanged is one."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames import (
    FrameSelectionConfig,
    plan_indices,
    plan_selection,
    prepare_rectified_frames,
)
from eval_assets.frames.admission import admit_recording
from eval_assets.recording import Recording
from eval_assets.recording.messages import CameraInfo
from eval_assets.recording.validate import (
    CalibrationChangeError,
    find_calibration_change,
    validate_recording,
)
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage


@pytest.fixture
def zoomed(sample_db: Path, tmp_path: Path) -> Path:
    """The sample with fx and fy x1.5 from frame 12 (camera_info message 12) on."""
    db = Path(shutil.copy2(sample_db, tmp_path / "zoomed.db"))
    damage.scale_intrinsics(db, 12, 1.5)
    return db


def test_intrinsics_changing_mid_recording_are_refused_at_the_door(zoomed: Path) -> None:
    with pytest.raises(CalibrationChangeError) as refused:
        validate_recording(zoomed)
    message = str(refused.value)
    assert message.startswith(f"{zoomed}: the camera calibration changes within the recording")
    assert "from frame 12 (color_image ts=" in message and "camera_info message 12" in message
    assert "K[0] (fx) 402 -> 603 (x1.5)" in message and "K[4] (fy)" in message
    assert "Fix: split the recording at ts=" in message and "frames before 12" in message
    assert refused.value.stream == "camera_info" and refused.value.row_id is not None
    with pytest.raises(CalibrationChangeError):
        admit_recording(zoomed)  # the sensor's, the ingest asset's and `eval-assets run`'s door


def test_the_frame_stage_refuses_it_and_one_side_of_the_change_is_fine(zoomed: Path,
                                                                      tmp_path: Path) -> None:
    with Recording.open(zoomed) as rec:
        with pytest.raises(CalibrationChangeError, match=r"select frames on one side of the "
                                                         r"change \(stop: 12 or start: 12"):
            prepare_rectified_frames(rec, tmp_path / "all",
                                     plan_selection(rec, FrameSelectionConfig()))
        before = prepare_rectified_frames(rec, tmp_path / "before", plan_indices(rec, range(12)))
    assert len(before.frames) == 12
    result = CliRunner().invoke(app, ["vqa", "generate", str(zoomed),
                                      "--output", str(tmp_path / "dataset")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "K[0] (fx)" in result.output


def test_distortion_changes_are_refused_and_republished_noise_is_not(tmp_path: Path) -> None:
    def distortion(info: CameraInfo) -> CameraInfo:
        return dataclasses.replace(info, D=(info.D[0] * 2, *info.D[1:]))

    def float_noise(info: CameraInfo) -> CameraInfo:  # a float32 round trip, say
        return dataclasses.replace(info, K=(info.K[0] * (1 + 1e-7), *info.K[1:]))

    changed = make_recording(tmp_path / "distortion.db", n_frames=4, width=160, height=120)
    damage.edit_calibration(changed, 2, distortion)
    with Recording.open(changed) as rec:
        change = find_calibration_change(rec)
        assert change is not None and (change.frame, change.message) == (2, 2)
        assert change.differences == ("D[0] -0.02 -> -0.04 (x2)",)
        assert find_calibration_change(rec, [0, 1]) is None  # one side of it
    noisy = make_recording(tmp_path / "noisy.db", n_frames=4, width=160, height=120)
    damage.edit_calibration(noisy, 2, float_noise)
    assert validate_recording(noisy).inventory.image_count == 4
