"""Rectified frames are pixel-identical to the real dimOS 0.0.15 frame loader's.

dimOS (``dimos.evals.vqa.pointcloud_frame``) rectifies with float ``CV_32FC1`` tables from
``cv2.fisheye.initUndistortRectifyMap`` / ``cv2.initUndistortRectifyMap`` (new camera matrix =
``P[:3,:3]``) and ``cv2.remap(..., INTER_LINEAR)`` with the default black constant border. Its
loader runs in its own venv (see :mod:`eval_assets_tests.reference`); a few frames are enough.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.frames import build_rectified_frames, load_rectified_image
from eval_assets.recording import Recording
from eval_assets_tests import reference
from eval_assets_tests.factories import make_recording
from eval_assets_tests.reference import run_dimos

pytestmark = pytest.mark.reference
dimos_python = reference.dimos_python  # the shared session fixture (the dimOS venv's python)

_DIMOS_FRAMES = """
    import sys
    from pathlib import Path

    import cv2
    import numpy as np
    from dimos.evals.vqa.pointcloud_frame import (
        PointCloudFrameLoader,
        PointCloudFrameUnavailableError,
    )

    db, out = sys.argv[1], Path(sys.argv[2])
    with PointCloudFrameLoader(db) as loader:
        for index in map(int, sys.argv[3:]):
            try:
                frame = loader.load(index)
                image, k = frame.image, np.asarray(frame.camera_info.K).reshape(3, 3)
            except PointCloudFrameUnavailableError:
                image, k = loader.load_image(index), None
            assert image.format.name == "RGB", image.format
            np.save(out / f"{index}.npy", image.data)
            cv2.imwrite(str(out / f"{index}.png"), cv2.cvtColor(image.data, cv2.COLOR_RGB2BGR))
            if k is not None:
                np.save(out / f"{index}.K.npy", k)
    print(cv2.__version__)
"""


def _dimos_frames(python: Path, db: Path, out: Path, indices: list[int]) -> str:
    out.mkdir()
    return run_dimos(python, _DIMOS_FRAMES, db, out, *indices).strip()


def _assert_identical(db: Path, indices: list[int], tmp_path: Path, python: Path) -> None:
    dimos_cv2 = _dimos_frames(python, db, tmp_path / "dimos", indices)
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, tmp_path / "ours", indices)
    assert dimos_cv2 == cv2.__version__, (
        f"OpenCV differs: dimOS venv {dimos_cv2}, ours {cv2.__version__}; pixel parity is only "
        "defined for the same remap implementation"
    )
    for frame in frames:
        ours = load_rectified_image(tmp_path / "ours", frame)
        theirs = np.load(tmp_path / "dimos" / f"{frame.frame_index}.npy")
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        if not np.array_equal(ours, theirs):
            diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
            pytest.fail(f"frame {frame.frame_index}: max |diff| {diff.max()} on "
                        f"{np.mean(diff.max(axis=2) > 0):.3%} of pixels")
        k_path = tmp_path / "dimos" / f"{frame.frame_index}.K.npy"
        if k_path.exists():
            np.testing.assert_array_equal(np.asarray(frame.K_rect).reshape(3, 3), np.load(k_path))


def test_sample_recording_matches_dimos(sample_db: Path, tmp_path: Path,
                                        dimos_python: Path) -> None:
    """The bundled sample (equidistant): first, middle and last frame."""
    with Recording.open(sample_db) as rec:
        n = len(rec.timestamps("color_image"))
    _assert_identical(sample_db, [0, n // 2, n - 1], tmp_path, dimos_python)


@pytest.mark.parametrize("model", ["plumb_bob", "rational_polynomial"])
def test_pinhole_models_match_dimos(model: str, tmp_path: Path, dimos_python: Path) -> None:
    """The pinhole path (``cv2.initUndistortRectifyMap``) on a small recording from our writer."""
    db = make_recording(tmp_path / f"{model}.db", n_frames=2, width=160, height=120,
                        distortion_model=model)
    _assert_identical(db, [0, 1], tmp_path, dimos_python)
