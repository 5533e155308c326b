"""Ground-truth overlays: boxes with labels, mask outlines and LiDAR points by depth.

Masks are drawn as outlines only, never as a tint: a tint changes the apparent colour of the
object it covers (an orange ball under a blue tint looks grey), and colour is what some
questions ask about.

Everything is drawn with OpenCV on RGB ``uint8`` arrays with fixed parameters (no anti-aliasing
randomness, no fonts from the system), so the same inputs give the same pixels and PNG bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from eval_assets.geometry.ranging import camera_points, zbuffer_projection

__all__ = [
    "DEFAULT_DEPTH_RANGE",
    "PALETTE",
    "BoxLabel",
    "depth_colours",
    "encode_jpeg",
    "encode_png",
    "project_points",
    "render_overlay",
    "resize_to_width",
]

BoxLabel = tuple[tuple[float, float, float, float], str]

# Distinct RGB colours for boxes and mask outlines (Okabe-Ito, then tab10 extras). No white or
# black: both vanish against bright or dark backgrounds, and black is the outline's underlay.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 159, 0),
    (86, 180, 233),
    (0, 158, 115),
    (240, 228, 66),
    (0, 114, 178),
    (213, 94, 0),
    (204, 121, 167),
    (148, 103, 189),
    (23, 190, 207),
    (188, 189, 34),
)
# 0-4 m covers the distance buckets (under 1, 1-2, 2-3, 3 or more); farther points saturate.
DEFAULT_DEPTH_RANGE = (0.0, 4.0)
_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 6]
_FONT = cv2.FONT_HERSHEY_SIMPLEX


def depth_colours(depths: np.ndarray, depth_range: tuple[float, float] = DEFAULT_DEPTH_RANGE
                  ) -> np.ndarray:
    """RGB ``(N, 3) uint8`` colours of depths on the turbo colour map (near: blue, far: red)."""
    d = np.asarray(depths, dtype=np.float64).reshape(-1)
    lo, hi = depth_range
    if not hi > lo:
        raise ValueError(f"depth_range must be (low, high) with high > low, got {depth_range}")
    levels = np.clip(np.nan_to_num((d - lo) / (hi - lo), nan=1.0), 0.0, 1.0)
    idx = np.round(levels * 255).astype(np.uint8).reshape(-1, 1)
    bgr = cv2.applyColorMap(idx, cv2.COLORMAP_TURBO).reshape(-1, 3)
    return bgr[:, ::-1].copy()


def project_points(points_xyz: np.ndarray, camera_from_cloud: np.ndarray, K: np.ndarray,
                   width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Cloud-frame points to z-buffered pixels ``(N, 2)`` (u, v) and their Euclidean range.

    The same projection the range statistics use (geometry/ranging.py), so the drawn points are
    exactly those that decided the distance answers.
    """
    u, v, _, rng = zbuffer_projection(camera_points(points_xyz, camera_from_cloud), K,
                                      width, height)
    return np.stack([u, v], axis=1), rng


def resize_to_width(image: np.ndarray, max_width: int) -> tuple[np.ndarray, float]:
    """``image`` shrunk (area interpolation) to at most ``max_width`` pixels wide, and the scale."""
    h, w = image.shape[:2]
    if w <= max_width:
        return image, 1.0
    scale = max_width / w
    size = (max_width, max(1, round(h * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA), scale


def encode_png(rgb: np.ndarray) -> bytes:
    """Deterministic PNG bytes of an RGB ``uint8`` image."""
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                           _PNG_PARAMS)
    if not ok:
        raise ValueError(f"PNG encoding failed for an image of shape {rgb.shape}")
    return buf.tobytes()


def encode_jpeg(rgb: np.ndarray, quality: int = 70, *, full_chroma: bool = True) -> bytes:
    """Baseline JPEG bytes of an RGB ``uint8`` image (fixed quality, no timestamp: deterministic
    for one libjpeg build).

    ``full_chroma`` keeps colour at full resolution (4:4:4): the usual 4:2:0 halves it and
    smears the colour of small objects, and colour is what some questions ask about. Without it
    (for overlays, whose dense coloured dots cost a third more at 4:4:4) chroma is 4:2:0.
    """
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    sampling = (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444 if full_chroma
                else cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                            sampling])
    if not ok:
        raise ValueError(f"JPEG encoding failed for an image of shape {rgb.shape}")
    return buf.tobytes()


def _text_colour(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    luminance = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    return (0, 0, 0) if luminance > 140 else (255, 255, 255)


def _ascii(text: str) -> str:
    # Hershey fonts only draw ASCII; anything else would come out as '?' glyph soup anyway.
    return text.encode("ascii", "replace").decode("ascii")


def _draw_points(out: np.ndarray, uv: np.ndarray, colours: np.ndarray, radius: int) -> None:
    h, w = out.shape[:2]
    u = uv[:, 0].astype(np.int64)
    v = uv[:, 1].astype(np.int64)
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            if dx * dx + dy * dy > radius * radius + radius:
                continue
            uu, vv = u + dx, v + dy
            ok = (uu >= 0) & (uu < w) & (vv >= 0) & (vv < h)
            out[vv[ok], uu[ok]] = colours[ok]


Rect = tuple[int, int, int, int]


def _overlaps(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place_label(size: tuple[int, int], box: Rect, shape: tuple[int, int],
                 placed: Sequence[Rect]) -> Rect:
    """Where a label goes: above the box, inside its top, below it, then stacked higher up;
    the first spot that hits no earlier label wins (else: above the box)."""
    lw, lh = size
    h, w = shape
    x0, y0, _, y1 = box
    left = min(max(0, x0), max(0, w - lw))
    tops = [y0 - lh, y0, y1 + 1] + [y0 - lh * k for k in range(2, 6)]
    candidates = [(left, min(max(0, t), max(0, h - lh))) for t in tops]
    for cx, cy in candidates:
        rect = (cx, cy, cx + lw, cy + lh)
        if not any(_overlaps(rect, other) for other in placed):
            return rect
    cx, cy = candidates[0]
    return (cx, cy, cx + lw, cy + lh)


def _draw_labels(out: np.ndarray, labels: Sequence[tuple[str, Rect, tuple[int, int, int]]],
                 scale: float, thickness: int) -> None:
    """Labels with a filled background, placed so that they do not cover each other."""
    placed: list[Rect] = []
    for text, box, colour in labels:
        (tw, th), base = cv2.getTextSize(text, _FONT, scale, thickness)
        pad = max(2, thickness + 1)
        rect = _place_label((tw + 2 * pad, th + base + 2 * pad), box, out.shape[:2], placed)
        placed.append(rect)
        cv2.rectangle(out, rect[:2], (rect[2] - 1, rect[3] - 1), colour, thickness=-1)
        cv2.putText(out, text, (rect[0] + pad, rect[1] + pad + th), _FONT, scale,
                    _text_colour(colour), thickness, lineType=cv2.LINE_AA)


def render_overlay(
    image: np.ndarray,
    boxes: Sequence[BoxLabel],
    masks: Sequence[np.ndarray],
    points_uv: np.ndarray | None = None,
    depths: np.ndarray | None = None,
    *,
    depth_range: tuple[float, float] = DEFAULT_DEPTH_RANGE,
) -> np.ndarray:
    """The image with ground truth drawn on it: LiDAR points, then mask outlines, then boxes.

    ``image`` is RGB ``(H, W, 3) uint8``; ``boxes`` are ``((x0, y0, x1, y1), label)`` in pixel
    edges; ``masks[i]`` is an ``(H, W)`` boolean mask whose outline (its external contours, on a
    dark underlay) is drawn in box ``i``'s colour (extra masks cycle the palette); pixels inside
    a mask keep their colour. ``points_uv`` ``(N, 2)`` pixel columns/rows with ``depths`` ``(N,)``
    metres, coloured on the turbo map over ``depth_range``. Returns a new array; the input is
    not touched.
    """
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(
            f"image must be an RGB uint8 array of shape (H, W, 3), got {img.dtype} {img.shape}")
    h, w = img.shape[:2]
    out = img.copy()
    checked = []
    for i, mask in enumerate(masks):
        m = np.asarray(mask).astype(bool)
        if m.shape != (h, w):
            raise ValueError(
                f"mask {i} has shape {m.shape}, expected {(h, w)} to match the image; resize "
                "masks with the image (nearest neighbour)")
        checked.append(m)
    if (points_uv is None) != (depths is None):
        raise ValueError("points_uv and depths go together: pass both or neither")
    if points_uv is not None and depths is not None:
        uv = np.asarray(points_uv)
        d = np.asarray(depths, dtype=np.float64).reshape(-1)
        if uv.ndim != 2 or uv.shape[1] != 2 or len(uv) != len(d):
            raise ValueError(
                f"points_uv must be (N, 2) with one depth per point; got {uv.shape} and "
                f"{d.shape}")
        # Far points first, so near ones (drawn last) stay visible where dots overlap.
        order = np.argsort(-np.nan_to_num(d, nan=np.inf), kind="stable")
        radius = 1 if max(h, w) < 1000 else 2
        _draw_points(out, uv[order], depth_colours(d[order], depth_range), radius)
    thickness = max(1, round(min(h, w) / 240))
    for i, m in enumerate(checked):
        # Contours only: the object's own pixels must keep their colour. The outline follows
        # the mask's edge pixels, so it covers at most a thin rim of the object.
        contours, _ = cv2.findContours(m.astype(np.uint8), cv2.RETR_EXTERNAL,
                                       cv2.CHAIN_APPROX_NONE)
        cv2.drawContours(out, contours, -1, (0, 0, 0), thickness + 2)
        cv2.drawContours(out, contours, -1, PALETTE[i % len(PALETTE)], thickness)
    scale = max(0.35, min(h, w) / 900)
    labels: list[tuple[str, Rect, tuple[int, int, int]]] = []
    for i, (box, label) in enumerate(boxes):
        x0, y0, x1, y1 = (float(c) for c in box)
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f"box {i} ({label!r}) = {box} must have x0 < x1 and y0 < y1")
        colour = PALETTE[i % len(PALETTE)]
        # Pixel edges to the last covered pixel: (0, 0, 10, 5) covers columns 0..9.
        p0 = (int(np.floor(x0)), int(np.floor(y0)))
        p1 = (int(np.ceil(x1)) - 1, int(np.ceil(y1)) - 1)
        # A dark outline under the colour keeps the box visible on any background.
        cv2.rectangle(out, p0, p1, (0, 0, 0), thickness + 2)
        cv2.rectangle(out, p0, p1, colour, thickness)
        if label:
            labels.append((_ascii(label), (*p0, *p1), colour))
    # Labels after every box, so no box line crosses a label.
    _draw_labels(out, labels, scale, max(1, thickness - 1))
    return out
