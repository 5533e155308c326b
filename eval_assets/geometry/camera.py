"""Camera calibration from a recorded ``CameraInfo``: rectification maps and pixel undistortion.

The rectified image is what every downstream step (author, detector, segmenter, LiDAR projection)
sees, so its intrinsics ``K_rect`` are the only ones used after this point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from eval_assets.recording.messages import CameraInfo

# Canonical model name -> names accepted for it. "fisheye" and "kannala_brandt" are what some
# drivers write for the same 4-coefficient equidistant model; dimOS accepts them too.
_MODEL_ALIASES: dict[str, tuple[str, ...]] = {
    "equidistant": ("equidistant", "fisheye", "kannala_brandt"),
    "plumb_bob": ("plumb_bob",),
    "rational_polynomial": ("rational_polynomial",),
}
SUPPORTED_MODELS: tuple[str, ...] = tuple(_MODEL_ALIASES)

# Coefficient counts cv2's pinhole functions accept (k1 k2 p1 p2 [k3 [k4 k5 k6 [s1..s4 [tx ty]]]]).
_PINHOLE_D_LENGTHS = (4, 5, 8, 12, 14)

# Iterative point undistortion: the defaults (5-10 iterations) leave tenths of a pixel of error
# near the corners of a strongly distorted lens.
_UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)


def canonical_model(name: str) -> str:
    """The canonical distortion model for a recorded ``distortion_model`` string.

    Raises ``ValueError`` naming the model and the supported ones when it is unknown.
    """
    key = name.strip().lower()
    for canonical, aliases in _MODEL_ALIASES.items():
        if key in aliases:
            return canonical
    raise ValueError(
        f"camera_info distortion_model {name!r} is not supported; supported models: "
        f"{', '.join(SUPPORTED_MODELS)} ('fisheye' and 'kannala_brandt' mean equidistant)"
    )


def _distortion_vector(model: str, d: tuple[float, ...]) -> np.ndarray:
    """``D`` shaped for cv2, validated against the model's coefficient count."""
    coeffs = np.asarray(d, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(coeffs)):
        raise ValueError(f"camera_info field D has non-finite values: {list(coeffs)}")
    if model == "equidistant":
        if coeffs.size == 0:
            return np.zeros(4)
        # Some writers pad the four fisheye coefficients with zeros; anything else is ambiguous.
        if coeffs.size < 4 or np.any(coeffs[4:] != 0.0):
            raise ValueError(
                f"camera_info field D has {coeffs.size} values {list(coeffs)} for the equidistant "
                "model, which needs exactly 4 (k1..k4); fix the calibration"
            )
        return coeffs[:4].copy()
    if coeffs.size == 0:
        return np.zeros(5)
    if coeffs.size not in _PINHOLE_D_LENGTHS:
        raise ValueError(
            f"camera_info field D has {coeffs.size} values for the {model} model; expected one of "
            f"{_PINHOLE_D_LENGTHS} (plumb_bob: 5, rational_polynomial: 8); fix the calibration"
        )
    return coeffs


@dataclass(eq=False)
class CameraModel:
    """A calibrated camera and its rectified pinhole counterpart.

    ``K``/``D``/``R`` describe the recorded (distorted) camera; ``K_rect``/``P_rect`` the rectified
    image produced by :meth:`rectify`. Remap tables are built on first use and cached.
    """

    distortion_model: str
    width: int
    height: int
    K: np.ndarray
    D: np.ndarray
    R: np.ndarray
    K_rect: np.ndarray
    P_rect: np.ndarray
    _maps: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_camera_info(cls, info: CameraInfo) -> CameraModel:
        """Build the model from a recorded ``CameraInfo``.

        An all-zero ``R`` means identity; ``K_rect`` is ``P[:3,:3]`` when ``P`` is non-zero, else
        ``K``. Raises ``ValueError`` for an unknown model or malformed fields.
        """
        model = canonical_model(info.distortion_model)
        if info.width <= 0 or info.height <= 0:
            raise ValueError(
                f"camera_info has size {info.width}x{info.height}; width and height must be "
                "positive"
            )
        k = _matrix(info.K, 9, "K").reshape(3, 3)
        if k[0, 0] <= 0 or k[1, 1] <= 0:
            raise ValueError(f"camera_info field K has non-positive focal lengths: {list(info.K)}")
        r = _matrix(info.R, 9, "R").reshape(3, 3)
        if not np.any(r):
            r = np.eye(3)
        p = _matrix(info.P, 12, "P").reshape(3, 4)
        if np.any(p):
            if p[0, 0] <= 0 or p[1, 1] <= 0:
                raise ValueError(
                    f"camera_info field P has non-positive focal lengths: {list(info.P)}"
                )
            p_rect = p.copy()
        else:
            p_rect = np.hstack([k, np.zeros((3, 1))])
        return cls(
            distortion_model=model,
            width=int(info.width),
            height=int(info.height),
            K=k,
            D=_distortion_vector(model, info.D),
            R=r,
            K_rect=p_rect[:, :3].copy(),
            P_rect=p_rect,
        )

    def _remap_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Float ``CV_32FC1`` tables, built once, exactly as dimOS 0.0.15 builds them.

        Keep them float: ``cv2.convertMaps(..., CV_16SC2)`` quantises the source positions to
        1/32 px, and OpenCV (>= 4.11) interpolates float tables in float, so fixed-point tables
        change up to 3 grey levels on ~1.7% of pixels versus dimOS's rectified images.
        """
        if self._maps is None:
            size = (self.width, self.height)
            if self.distortion_model == "equidistant":
                self._maps = cv2.fisheye.initUndistortRectifyMap(
                    self.K, self.D, self.R, self.K_rect, size, cv2.CV_32FC1
                )
            else:
                self._maps = cv2.initUndistortRectifyMap(
                    self.K, self.D, self.R, self.K_rect, size, cv2.CV_32FC1
                )
        return self._maps

    def rectify(self, image: np.ndarray) -> np.ndarray:
        """The rectified image (bilinear; pixels that map outside the source are black).

        The same OpenCV call as dimOS's frame loader (float tables, ``INTER_LINEAR``, constant
        black border), so the pixels are identical to dimOS's for the same decoded image.
        """
        if image.shape[:2] != (self.height, self.width):
            raise ValueError(
                f"image is {image.shape[1]}x{image.shape[0]} but the calibration is "
                f"{self.width}x{self.height}; rectify with the camera_info recorded for this image"
            )
        map_x, map_y = self._remap_tables()
        return cv2.remap(image, map_x, map_y, interpolation=cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)

    def undistort_pixels(self, px: np.ndarray) -> np.ndarray:
        """Map distorted (recorded) pixel coordinates ``(N, 2)`` to rectified pixel coordinates."""
        pts = np.asarray(px, dtype=np.float64).reshape(-1, 1, 2)
        if pts.shape[0] == 0:
            return np.zeros((0, 2))
        if self.distortion_model == "equidistant":
            out = cv2.fisheye.undistortPoints(pts, self.K, self.D, R=self.R, P=self.K_rect,
                                              criteria=_UNDISTORT_CRITERIA)
        else:
            out = cv2.undistortPoints(pts, self.K, self.D, R=self.R, P=self.K_rect,
                                      criteria=_UNDISTORT_CRITERIA)
        return out.reshape(-1, 2)


def _matrix(values: tuple[float, ...], size: int, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size != size or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"camera_info field {name} must hold {size} finite numbers, got {list(arr)}"
        )
    return arr
