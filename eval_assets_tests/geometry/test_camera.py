"""Rectification round trips: dots placed at distorted positions land on their rectified pixels."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from eval_assets.geometry.camera import CameraModel
from eval_assets.recording.messages import CameraInfo, Header

W, H = 640, 480
K = (400.0, 0.0, 322.5, 0.0, 398.0, 237.25, 0.0, 0.0, 1.0)
ZERO9 = (0.0,) * 9
ZERO12 = (0.0,) * 12
# A rectified camera that differs from K, so P really is used.
P_WIDE = (330.0, 0.0, 318.0, 0.0, 0.0, 331.0, 242.0, 0.0, 0.0, 0.0, 1.0, 0.0)


def _rot(rx: float, ry: float, rz: float) -> tuple[float, ...]:
    r, _ = cv2.Rodrigues(np.array([rx, ry, rz]))
    return tuple(float(x) for x in r.reshape(-1))


CASES = {
    "equidistant": ("equidistant", (-0.03, 0.01, -0.005, 0.001), ZERO9, ZERO12),
    "equidistant_R_P": ("equidistant", (0.04, -0.01, 0.002, -0.0005), _rot(0.02, -0.015, 0.01),
                        P_WIDE),
    "plumb_bob": ("plumb_bob", (-0.28, 0.07, 0.001, -0.0005, 0.0), ZERO9, ZERO12),
    "plumb_bob_R_P": ("plumb_bob", (-0.2, 0.03, 0.0008, 0.0004, -0.002), _rot(-0.01, 0.02, 0.0),
                      P_WIDE),
    "rational_polynomial": ("rational_polynomial",
                            (0.6, -0.05, 0.0005, -0.0003, -0.01, 0.95, 0.05, -0.02), ZERO9, ZERO12),
}


def _info(model: str, d: tuple[float, ...], r: tuple[float, ...],
          p: tuple[float, ...]) -> CameraInfo:
    return CameraInfo(header=Header.at(1.0, "camera_optical"), height=H, width=W,
                      distortion_model=model, D=d, K=K, R=r, P=p)


def _distort(cam: CameraModel, rect_px: np.ndarray) -> np.ndarray:
    """Where OpenCV's forward models put the rays of rectified pixels in the recorded image."""
    ones = np.ones((len(rect_px), 1))
    rays_rect = np.hstack([rect_px, ones]) @ np.linalg.inv(cam.K_rect).T
    rays = rays_rect @ cam.R  # R maps recorded-camera rays to rectified ones: undo it (R^T x)
    zero = np.zeros(3)
    if cam.distortion_model == "equidistant":
        norm = (rays[:, :2] / rays[:, 2:]).reshape(-1, 1, 2)
        out = cv2.fisheye.distortPoints(norm, cam.K, cam.D)
    else:
        out, _ = cv2.projectPoints(rays.reshape(-1, 1, 3), zero, zero, cam.K, cam.D)
    return out.reshape(-1, 2)


def _dots_image(px: np.ndarray, sigma: float = 1.2) -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    img = np.zeros((H, W))
    for x, y in px:
        x0, y0 = round(x), round(y)
        sl = np.s_[max(y0 - 7, 0):y0 + 8, max(x0 - 7, 0):x0 + 8]
        img[sl] += np.exp(-((xx[sl] - x) ** 2 + (yy[sl] - y) ** 2) / (2 * sigma**2))
    return np.clip(img * 255.0, 0, 255).astype(np.uint8)


def _centroid(img: np.ndarray, x: float, y: float, half: int = 12) -> tuple[float, float]:
    x0, y0 = round(x), round(y)
    win = img[y0 - half:y0 + half + 1, x0 - half:x0 + half + 1].astype(np.float64)
    win = np.where(win > 8, win, 0.0)  # ignore interpolation dust at the window edge
    ys, xs = np.mgrid[y0 - half:y0 + half + 1, x0 - half:x0 + half + 1]
    return float((win * xs).sum() / win.sum()), float((win * ys).sum() / win.sum())


@pytest.mark.parametrize("case", sorted(CASES))
def test_rectify_moves_dots_to_their_rectified_pixels(case: str) -> None:
    cam = CameraModel.from_camera_info(_info(*CASES[case]))
    gu, gv = np.meshgrid(np.arange(40.0, W - 30, 52.0) + 0.3, np.arange(35.0, H - 30, 47.0) + 0.7)
    rect = np.stack([gu.ravel(), gv.ravel()], axis=1)
    raw = _distort(cam, rect)
    ok = (raw[:, 0] > 10) & (raw[:, 0] < W - 11) & (raw[:, 1] > 10) & (raw[:, 1] < H - 11)
    rect, raw = rect[ok], raw[ok]
    assert len(rect) >= 60, "too few dots survive: the test camera is mis-specified"

    rectified = cam.rectify(_dots_image(raw))
    found = np.array([_centroid(rectified, x, y) for x, y in rect])
    err = np.linalg.norm(found - rect, axis=1)
    assert err.max() < 0.5, f"{case}: max rectification error {err.max():.3f} px"

    # Without rectification the same dots are far off: the check above is not vacuous.
    assert np.linalg.norm(raw - rect, axis=1).max() > 10.0

    # Sparse undistortion agrees with the dense maps and inverts the forward model exactly.
    back = cam.undistort_pixels(raw)
    assert np.abs(back - rect).max() < 1e-3


def test_rectified_intrinsics_come_from_p_when_given_else_k() -> None:
    with_p = CameraModel.from_camera_info(_info("plumb_bob", (0.0,) * 5, ZERO9, P_WIDE))
    np.testing.assert_array_equal(with_p.K_rect, np.array(P_WIDE).reshape(3, 4)[:, :3])
    np.testing.assert_array_equal(with_p.P_rect, np.array(P_WIDE).reshape(3, 4))
    without = CameraModel.from_camera_info(_info("equidistant", (0.0,) * 4, ZERO9, ZERO12))
    np.testing.assert_array_equal(without.K_rect, np.array(K).reshape(3, 3))
    np.testing.assert_array_equal(without.P_rect[:, 3], np.zeros(3))
    np.testing.assert_array_equal(without.R, np.eye(3))  # all-zero R means identity
    assert (without.width, without.height) == (W, H)


def test_zero_distortion_is_identity_rectification() -> None:
    cam = CameraModel.from_camera_info(_info("plumb_bob", (0.0,) * 5, ZERO9, ZERO12))
    img = np.random.default_rng(0).integers(0, 256, (H, W, 3), dtype=np.uint8)
    np.testing.assert_array_equal(cam.rectify(img), img)


def test_unknown_model_names_model_and_supported_ones() -> None:
    with pytest.raises(ValueError, match=r"'mei'.*equidistant, plumb_bob, rational_polynomial"):
        CameraModel.from_camera_info(_info("mei", (0.1,), ZERO9, ZERO12))


def test_bad_fields_are_named() -> None:
    with pytest.raises(ValueError, match=r"field D has 3 values.*equidistant"):
        CameraModel.from_camera_info(_info("equidistant", (0.1, 0.2, 0.3), ZERO9, ZERO12))
    with pytest.raises(ValueError, match=r"field D has 6 values for the plumb_bob"):
        CameraModel.from_camera_info(_info("plumb_bob", (0.1,) * 6, ZERO9, ZERO12))
    bad_k = CameraInfo(header=Header(), height=H, width=W, distortion_model="plumb_bob",
                       D=(), K=(0.0,) * 9, R=ZERO9, P=ZERO12)
    with pytest.raises(ValueError, match="field K"):
        CameraModel.from_camera_info(bad_k)


def test_rectify_rejects_wrong_size() -> None:
    cam = CameraModel.from_camera_info(_info("plumb_bob", (0.0,) * 5, ZERO9, ZERO12))
    with pytest.raises(ValueError, match=r"image is 320x240 but the calibration is 640x480"):
        cam.rectify(np.zeros((240, 320, 3), dtype=np.uint8))


@pytest.mark.parametrize("case", sorted(CASES))
def test_rectify_is_dimos_remap_call_with_float_tables(case: str) -> None:
    """dimOS 0.0.15 remaps with float CV_32FC1 tables (test_rectify_dimos_parity checks against
    the real package); fixed-point CV_16SC2 tables round source positions to 1/32 px."""
    model, d, r, p = CASES[case]
    cam = CameraModel.from_camera_info(_info(model, d, r, p))
    img = cv2.GaussianBlur(np.random.default_rng(1).integers(0, 256, (H, W, 3), dtype=np.uint8),
                           (5, 5), 1.5)
    init = cv2.fisheye.initUndistortRectifyMap if model == "equidistant" \
        else cv2.initUndistortRectifyMap
    map_x, map_y = init(cam.K, cam.D, cam.R, cam.K_rect, (W, H), cv2.CV_32FC1)
    expected = cv2.remap(img, map_x, map_y, interpolation=cv2.INTER_LINEAR)
    np.testing.assert_array_equal(cam.rectify(img), expected)
    fixed = cv2.remap(img, *cv2.convertMaps(map_x, map_y, cv2.CV_16SC2), cv2.INTER_LINEAR)
    assert not np.array_equal(fixed, expected)  # the test tells the two table types apart
