"""Compare two synthesized samples: byte for byte on one machine, within tolerances across CPUs.

Regenerating the sample on another CPU does not reproduce every bit. On an AMD EPYC, 3 of 24
images and all 24 LiDAR scans changed bytes; camera_info and tf did not. Here (an AVX-512 Xeon)
neither numpy's baseline SIMD, OpenBLAS's Nehalem kernels, OpenCV without AVX nor a single thread
changed a byte, while jittering open3d's hit distances by ±1 float32 ulp reproduces the EPYC
result exactly: the ray casting rounds differently. A last-bit change in a hit distance moves a
LiDAR point by ~1e-6 m and flips a shading value that sits on a ``rint`` tie by one grey level
(JPEG then requantizes its 8×8 block); where a ray grazes an edge it can hit another surface: one
pixel of another colour, one LiDAR point elsewhere. (The room is closed, so every LiDAR ray hits
something and a scan always has 10 800 points; the matching does not rely on that.)

So :func:`compare_samples` checks exactly what no CPU may change (stream inventory, timestamps,
camera_info, TF frames and stamps, everything in ``scene.json`` that comes from seeded numpy or
pure-Python logic) and the ray-cast products, plus values that pass through libm or BLAS, within
:class:`Tolerances`; :func:`byte_differences` is the strict check for two syntheses on the same
machine.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.recording import Recording, image_to_rgb
from eval_assets.recording.messages import Image, PointCloud2, TFMessage
from eval_assets.synth import sidecar_paths

_POSE_COLUMNS = "pose_x, pose_y, pose_z, pose_qx, pose_qy, pose_qz, pose_qw"
# Candidate pairs are found by sorting points along one axis; an oblique one keeps the room's
# axis-aligned walls from piling many points into the same slice.
_SORT_AXIS = np.array([0.57, 0.61, 0.55]) / np.linalg.norm([0.57, 0.61, 0.55])


@dataclass(frozen=True)
class Tolerances:
    """How far a sample regenerated on another CPU may drift from the committed one.

    Each default sits well above what last-bit rounding produced when it was emulated (hit
    distances jittered by a few float32 ulps, ray directions by up to 4 ulps) and well below what
    a real change produces (another seed, an object moved by 2 mm, an object's red channel changed
    by 6 levels); ``test_sample.py`` checks both sides.
    """

    # TF and robot poses come from libm sin/cos, whose FMA and non-FMA builds may differ in the
    # last bit; 1e-9 (metres, or quaternion units) is still far below any real change.
    pose: float = 1e-9
    # Pixels (max over RGB) more than ``image_levels`` grey levels off are outliers. One grazing
    # ray that hits another surface makes one wrong pixel, which JPEG smears over its 8x8 block
    # (emulated: up to 90 outliers); a rounding tie flips a level, which requantizes a block by up
    # to ~8 levels but leaves the mean untouched. A 2 mm move gives >= 0.11 % outliers and a mean
    # >= 0.017 levels in every image.
    image_levels: int = 4
    image_outlier_fraction: float = 5e-4
    image_mean_levels: float = 0.01
    # A LiDAR point is matched by a point of the other scan within ``lidar_xyz_m`` whose
    # intensity is within ``lidar_intensity`` (0-255 scale). Emulated rounding moves points by
    # <= 4e-5 m and intensities by <= 0.034 and leaves <= 1 point of 10 800 unmatched; a 2 mm move
    # or a 6-level recolour leaves >= 18 per scan unmatched.
    lidar_xyz_m: float = 1e-4
    lidar_intensity: float = 0.05
    lidar_unmatched_fraction: float = 5e-4
    # Truth id maps: the share of pixels per frame whose object id may differ (emulated: <= 1 px;
    # a 2 mm move: up to 0.07 %).
    id_map_fraction: float = 1e-4
    # scene.json values rounded to 6 decimals from poses computed through BLAS (np.linalg.inv): a
    # last-bit change upstream can move the stored value by one unit in the 6th decimal.
    json_pose: float = 1.5e-6
    # Per-object truth measured from the rendered pixels: an object may appear or vanish only as
    # a sliver of at most ``sliver_pixels``; its pixel count may change by ``pixels_abs`` or
    # ``pixels_rel`` of itself, its bbox by one pixel, its centroid by ``centroid_px`` plus what
    # two flipped pixels can move it, and its median surface distance by ``surface_m`` (a flipped
    # pixel moves the median to a neighbouring order statistic).
    sliver_pixels: int = 8
    pixels_abs: int = 4
    pixels_rel: float = 2e-3
    centroid_px: float = 0.02
    surface_m: float = 5e-4


@dataclass
class Comparison:
    """What :func:`compare_samples` found: the differences beyond tolerance and the worst drift."""

    differences: list[str] = field(default_factory=list)
    worst: dict[str, float] = field(default_factory=dict)

    def note(self, key: str, value: float) -> None:
        """Keep the largest ``value`` seen for ``key``."""
        self.worst[key] = max(self.worst.get(key, 0.0), float(value))

    def differ(self, message: str) -> None:
        """Record one difference beyond tolerance."""
        self.differences.append(message)

    def __bool__(self) -> bool:
        return bool(self.differences)

    def report(self, limit: int = 20) -> str:
        """The first ``limit`` differences and the worst drift, for an assertion message."""
        lines = self.differences[:limit]
        if len(self.differences) > limit:
            lines.append(f"... and {len(self.differences) - limit} more")
        worst = ", ".join(f"{k}={v:.3g}" for k, v in sorted(self.worst.items()))
        return "\n".join([*lines, f"worst drift: {worst}"])


def sample_paths(db: Path) -> tuple[Path, Path, Path]:
    """The three files of a synthesized sample: ``X.db``, ``X.scene.json``, ``X.truth.npz``."""
    scene_json, truth_npz = sidecar_paths(db)
    return db, scene_json, truth_npz


def byte_differences(a_db: Path, b_db: Path) -> list[str]:
    """Every file of two samples whose bytes differ, with the streams whose messages differ.

    The strict check for two syntheses on the same machine; empty when they are identical.
    """
    out = []
    for a, b in zip(sample_paths(a_db), sample_paths(b_db), strict=True):
        if a.read_bytes() == b.read_bytes():
            continue
        out.append(f"{a.name} and {b.name} differ in bytes")
        if a.suffix == ".db":
            with Recording.open(a) as ra, Recording.open(b) as rb:
                for name in sorted(set(ra.streams) & set(rb.streams)):
                    # Unequal counts: zip stops at the shorter stream, the count line says so.
                    n = sum(x != y for (_, x), (_, y) in zip(ra.iter_messages(name),
                                                             rb.iter_messages(name), strict=False))
                    if n or ra.streams[name].count != rb.streams[name].count:
                        out.append(f"  {name}: {n} of {ra.streams[name].count} messages differ")
    return out


def compare_samples(new_db: Path, old_db: Path, tol: Tolerances = Tolerances()) -> Comparison:
    """Compare sample ``new_db`` with ``old_db`` (and their sidecars) within ``tol``.

    Exact: stream inventory (names, codecs, payload types, counts), every timestamp, camera_info,
    TF structure and stamps, and the seeded parts of ``scene.json``. Within tolerance: TF and
    robot poses, decoded images, LiDAR points, id maps and the per-object pixel truth.
    """
    out = Comparison()
    with Recording.open(new_db) as new, Recording.open(old_db) as old:
        _compare_recordings(new, old, tol, out)
    _compare_poses(new_db, old_db, tol, out)
    _, new_json, new_npz = sample_paths(new_db)
    _, old_json, old_npz = sample_paths(old_db)
    _compare_id_maps(new_npz, old_npz, tol, out)
    _compare_truth(json.loads(new_json.read_text()), json.loads(old_json.read_text()), tol, out)
    return out


# --- the recording ------------------------------------------------------------------------------


def _compare_recordings(new: Recording, old: Recording, tol: Tolerances, out: Comparison) -> None:
    def inventory(rec: Recording) -> dict[str, tuple[str, str, int]]:
        return {n: (s.payload_module, s.codec_id, s.count) for n, s in rec.streams.items()}

    if inventory(new) != inventory(old):
        out.differ(f"stream inventory {inventory(new)} != {inventory(old)}")
        return
    for name in sorted(old.streams):
        if not np.array_equal(new.timestamps(name), old.timestamps(name)):
            out.differ(f"{name}: timestamps differ")
            continue  # messages would be paired by index with the wrong partner
        compare = _STREAM_CHECKS.get(name, _compare_exactly)
        for i, (a, b) in enumerate(_pairs(new, old, name)):
            compare(f"{name}[{i}]", a, b, tol, out)


def _pairs(new: Recording, old: Recording, name: str) -> Iterator[tuple[Any, Any]]:
    for (_, a), (_, b) in zip(new.iter_messages(name), old.iter_messages(name), strict=True):
        yield a, b


def _compare_exactly(what: str, a: Any, b: Any, tol: Tolerances, out: Comparison) -> None:
    if a != b:
        out.differ(f"{what}: decoded messages differ")


def _compare_tf(what: str, a: TFMessage, b: TFMessage, tol: Tolerances, out: Comparison) -> None:
    def skeleton(m: TFMessage) -> list[tuple[Any, str]]:
        return [(t.header, t.child_frame_id) for t in m.transforms]

    if skeleton(a) != skeleton(b):
        out.differ(f"{what}: frames or stamps differ")
        return
    drift = max((abs(x - y) for ta, tb in zip(a.transforms, b.transforms, strict=True)
                 for x, y in zip((*ta.transform.translation, *ta.transform.rotation),
                                 (*tb.transform.translation, *tb.transform.rotation),
                                 strict=True)), default=0.0)
    out.note("tf", drift)
    if drift > tol.pose:
        out.differ(f"{what}: transform differs by {drift:.3g}")


def _compare_image(what: str, a: Image, b: Image, tol: Tolerances, out: Comparison) -> None:
    if (a.header, a.height, a.width, a.encoding) != (b.header, b.height, b.width, b.encoding):
        out.differ(f"{what}: header, size or encoding differs")
        return
    diff = np.abs(image_to_rgb(a).astype(np.int16) - image_to_rgb(b)).max(axis=2)
    outliers = np.count_nonzero(diff > tol.image_levels) / diff.size
    mean = float(diff.mean())
    out.note("image_max_levels", diff.max())
    out.note("image_outlier_fraction", outliers)
    out.note("image_mean_levels", mean)
    if outliers > tol.image_outlier_fraction or mean > tol.image_mean_levels:
        out.differ(f"{what}: {outliers:.2%} of pixels off by more than {tol.image_levels} levels "
                   f"(max {diff.max()}), mean difference {mean:.3f} levels")


def _compare_cloud(what: str, a: PointCloud2, b: PointCloud2, tol: Tolerances,
                   out: Comparison) -> None:
    def layout(m: PointCloud2) -> tuple[Any, ...]:
        return (m.header, m.height, m.fields, m.is_bigendian, m.point_step, m.is_dense)

    if layout(a) != layout(b):
        out.differ(f"{what}: header or point layout differs")
        return
    pa, pb = _points(a), _points(b)
    unmatched_a, drift_xyz, drift_i = unmatched_points(pa, pb, tol)
    unmatched_b, _, _ = unmatched_points(pb, pa, tol)
    fraction = (unmatched_a + unmatched_b) / max(len(pa) + len(pb), 1)
    out.note("lidar_xyz_m", drift_xyz)
    out.note("lidar_intensity", drift_i)
    out.note("lidar_unmatched_fraction", fraction)
    out.note("lidar_count_change", abs(len(pa) - len(pb)))
    if fraction > tol.lidar_unmatched_fraction:
        out.differ(f"{what}: {unmatched_a} of {len(pa)} and {unmatched_b} of {len(pb)} points "
                   f"have no partner within {tol.lidar_xyz_m} m / {tol.lidar_intensity} intensity")


def _points(cloud: PointCloud2) -> np.ndarray:
    return np.column_stack([cloud.xyz(), cloud.field_array("intensity")]).astype(np.float64)


def unmatched_points(a: np.ndarray, b: np.ndarray, tol: Tolerances) -> tuple[int, float, float]:
    """Points of ``a`` without a partner in ``b`` (within the xyz and intensity tolerances), and
    the largest xyz and intensity drift among the xyz-matched pairs.

    Points are paired by position, not by index, so a point that appears or vanishes in one scan
    (a grazing ray) costs one unmatched point instead of shifting every later one.
    """
    if len(a) == 0 or len(b) == 0:
        return len(a), 0.0, 0.0
    r = tol.lidar_xyz_m
    # |key_a - key_b| <= |a - b|, so every pair within r shares a window of width 2r in key.
    key_a, key_b = (np.einsum("nj,j->n", p[:, :3], _SORT_AXIS) for p in (a, b))
    order = np.argsort(key_b, kind="stable")
    sorted_b = key_b[order]
    lo = np.searchsorted(sorted_b, key_a - r, side="left")
    hi = np.searchsorted(sorted_b, key_a + r, side="right")
    counts = hi - lo
    ia = np.repeat(np.arange(len(a)), counts)
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    ib = order[starts + np.arange(counts.sum())]
    dist = np.linalg.norm(a[ia, :3] - b[ib, :3], axis=1)
    close = dist <= r
    ia, ib, dist = ia[close], ib[close], dist[close]
    if len(ia) == 0:
        return len(a), 0.0, 0.0
    # Each point's smallest intensity gap to any partner within the xyz tolerance.
    gap = np.full(len(a), np.inf)
    np.minimum.at(gap, ia, np.abs(a[ia, 3] - b[ib, 3]))
    unmatched = int(np.count_nonzero(gap > tol.lidar_intensity))
    return unmatched, float(dist.max()), float(gap[np.isfinite(gap)].max())


_STREAM_CHECKS = {
    "tf": _compare_tf, "color_image": _compare_image, "pointlio_lidar": _compare_cloud}


def _compare_poses(new_db: Path, old_db: Path, tol: Tolerances, out: Comparison) -> None:
    """The robot pose column of every row (the reader does not expose it; sqlite does)."""
    with Recording.open(new_db) as new, Recording.open(old_db) as old:
        streams = sorted(new.streams.keys() & old.streams.keys())
    for name in streams:
        a, b = _pose_rows(new_db, name), _pose_rows(old_db, name)
        if [r is None for r in a] != [r is None for r in b]:
            out.differ(f"{name}: rows with a pose differ")
            continue
        drift = max((abs(x - y) for ra, rb in zip(a, b, strict=True) if ra is not None
                     for x, y in zip(ra, rb, strict=True)), default=0.0)
        out.note("row_pose", drift)
        if drift > tol.pose:
            out.differ(f"{name}: row poses differ by {drift:.3g}")


def _pose_rows(db: Path, stream: str) -> list[tuple[float, ...] | None]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        rows = conn.execute(f'SELECT {_POSE_COLUMNS} FROM "{stream}" ORDER BY ts, id').fetchall()
    finally:
        conn.close()
    return [None if r[0] is None else tuple(r) for r in rows]


# --- the truth sidecars -------------------------------------------------------------------------


def _compare_id_maps(new_npz: Path, old_npz: Path, tol: Tolerances, out: Comparison) -> None:
    with np.load(new_npz) as a_npz, np.load(old_npz) as b_npz:
        if sorted(a_npz.keys()) != sorted(b_npz.keys()):
            out.differ(f"truth.npz keys {sorted(a_npz.keys())} != {sorted(b_npz.keys())}")
            return
        a, b = a_npz["id_maps"], b_npz["id_maps"]
    if (a.shape, a.dtype) != (b.shape, b.dtype):
        out.differ(f"id_maps {a.shape} {a.dtype} != {b.shape} {b.dtype}")
        return
    for i, fraction in enumerate(np.mean(a != b, axis=(1, 2))):
        out.note("id_map_fraction", fraction)
        if fraction > tol.id_map_fraction:
            out.differ(f"id_maps[{i}]: {fraction:.2%} of pixels hold another object id")


# Frame fields computed by seeded numpy / pure-Python arithmetic: no CPU may change them.
_EXACT_FRAME_KEYS = ("index", "image_ts", "lidar_ts", "lidar_dt")
# Object fields computed from the BLAS pose alone (not from any ray), stored to 6 decimals.
_POSE_OBJECT_KEYS = ("center_px", "center_distance_m")


def _compare_truth(new: dict[str, Any], old: dict[str, Any], tol: Tolerances,
                   out: Comparison) -> None:
    header_new = {k: v for k, v in new.items() if k != "frames"}
    header_old = {k: v for k, v in old.items() if k != "frames"}
    if header_new != header_old:
        changed = sorted(k for k in header_new.keys() | header_old.keys()
                         if header_new.get(k) != header_old.get(k))
        out.differ(f"scene.json: {', '.join(changed)} differ")
    if len(new["frames"]) != len(old["frames"]):
        out.differ(f"scene.json: {len(new['frames'])} frames != {len(old['frames'])}")
        return
    for fa, fb in zip(new["frames"], old["frames"], strict=True):
        what = f"scene.json frame {fb['index']}"
        if [fa[k] for k in _EXACT_FRAME_KEYS] != [fb[k] for k in _EXACT_FRAME_KEYS]:
            out.differ(f"{what}: index or timestamps differ")
        drift = _max_abs(fa["camera_from_world"], fb["camera_from_world"])
        out.note("json_pose", drift)
        if drift > tol.json_pose:
            out.differ(f"{what}: camera_from_world differs by {drift:.3g}")
        _compare_frame_objects(what, fa["objects"], fb["objects"], tol, out)


def _compare_frame_objects(what: str, new: list[dict[str, Any]], old: list[dict[str, Any]],
                           tol: Tolerances, out: Comparison) -> None:
    a, b = {o["id"]: o for o in new}, {o["id"]: o for o in old}
    for only, side in ((a.keys() - b.keys(), a), (b.keys() - a.keys(), b)):
        for oid in sorted(only):
            out.note("sliver_pixels", side[oid]["visible_pixels"])
            if side[oid]["visible_pixels"] > tol.sliver_pixels:
                out.differ(f"{what}: object {oid} ({side[oid]['visible_pixels']} px) is in only "
                           "one of the samples")
    for oid in sorted(a.keys() & b.keys()):
        oa, ob = a[oid], b[oid]
        obj = f"{what} object {oid}"
        if (oa["name"], oa["horizontal_third"]) != (ob["name"], ob["horizontal_third"]):
            out.differ(f"{obj}: name or horizontal_third differs")
        pose_drift = max(_max_abs(oa[k], ob[k]) for k in _POSE_OBJECT_KEYS)
        out.note("json_pose", pose_drift)
        if pose_drift > tol.json_pose:
            out.differ(f"{obj}: center_px / center_distance_m differ by {pose_drift:.3g}")
        pixels = abs(oa["visible_pixels"] - ob["visible_pixels"])
        bbox = _max_abs(oa["bbox_xyxy"], ob["bbox_xyxy"])
        centroid = _max_abs(oa["centroid_px"], ob["centroid_px"])
        surface = abs(oa["surface_distance_m"] - ob["surface_distance_m"])
        for key, value in (("visible_pixels", pixels), ("bbox_px", bbox),
                           ("centroid_px", centroid), ("surface_m", surface)):
            out.note(key, value)
        x0, y0, x1, y1 = ob["bbox_xyxy"]
        # A pixel at distance d from the centroid moves it by d / n when it flips.
        flip = 2 * math.hypot(x1 - x0, y1 - y0) / max(ob["visible_pixels"], 1)
        if pixels > max(tol.pixels_abs, tol.pixels_rel * ob["visible_pixels"]) or bbox > 1 \
                or centroid > tol.centroid_px + flip or surface > tol.surface_m:
            out.differ(f"{obj}: pixels {oa['visible_pixels']} vs {ob['visible_pixels']}, bbox "
                       f"{bbox:g} px, centroid {centroid:.3g} px, surface {surface:.3g} m apart")


def _max_abs(a: Any, b: Any) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return math.inf
    return float(np.max(np.abs(x - y), initial=0.0))
