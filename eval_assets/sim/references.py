"""Reference views of catalog objects: the images a team would take to teach a name.

:func:`render_reference_views` loads each object ALONE on a floor in a fresh PyBullet DIRECT
session, lets it come to rest, and renders it with the simulator's renderer and camera model
(``ER_TINY_RENDERER``, :class:`~eval_assets.sim.geometry.PinholeCamera`) from evenly spread
azimuths at a steep elevation (45° down by default). The recording's camera is a mast 0.65 m
high pitched 10° down with a 60° vertical field of view: it sees nothing more than 40° below
the horizon, so these are viewpoints the recording does not use, and a name taught with them
and recognised in the recording generalises across viewpoints.

For ``out_dir`` (``OUT.objects`` beside ``OUT.db``, see :func:`reference_dir`) it writes, per
object name, ``<name>/view_XX.png`` (RGB), ``<name>/view_XX.mask.png`` (255 = the object, from
the segmentation buffer) and ``<name>/object.json`` (``size_m``: the visual-mesh extents, the
same numbers as the ``size`` of the recording's ``scene.json``; ``source``: how the views were
made). That is the layout :class:`eval_assets.perception.taught_names.TaughtNames` reads.
Same entries and options, same bytes. The folder is built in a hidden sibling and renamed into
place, so a failure leaves the old folder (or nothing) there.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from eval_assets.sim.catalog import CatalogEntry, SimConfigError
from eval_assets.sim.geometry import PinholeCamera, VisualBox, view_matrix, visual_box
from eval_assets.sim.world import quiet_stdout
from eval_assets.synth.truth import rounded  # one rounding for every scene file

_FOV_Y_DEG = 60.0  # the simulator's camera
_NEAR, _FAR = 0.05, 30.0
_FILL = 0.8  # the object's bounding sphere spans this share of the image height
_SETTLE_STEPS, _SETTLE_CHECK_STEPS, _SETTLE_MAX_STEPS = 480, 60, 4800
_SETTLED_MOVE_M = 1e-3
GENERATOR = "eval_assets.sim.references/1"


@dataclass(frozen=True)
class ReferenceViews:
    """How the reference views are rendered: how many azimuths, how steep, how large."""

    views: int = 8
    elevation_deg: float = 45.0
    width: int = 320
    height: int = 240

    def __post_init__(self) -> None:
        if self.views < 1 or min(self.width, self.height) < 16 or not 0 < self.elevation_deg < 90:
            raise SimConfigError(f"reference views: {self.views} views of {self.width}x"
                                 f"{self.height} at {self.elevation_deg:g}° cannot be rendered. "
                                 "Fix: at least 1 view, 16x16 pixels, an elevation in (0, 90)")

    def camera(self) -> PinholeCamera:
        """The simulator's pinhole model at this size."""
        return PinholeCamera(self.width, self.height, _FOV_Y_DEG, _NEAR, _FAR)


def reference_dir(db: Path) -> Path:
    """``X.db`` → ``X.objects`` (the reference views beside a simulated recording)."""
    return db.with_suffix(".objects")


def look_at(target: np.ndarray, azimuth_deg: float, elevation_deg: float,
            distance_m: float) -> np.ndarray:
    """``world → camera`` (OpenCV axes) of a camera ``distance_m`` from ``target``, at that
    azimuth (about the world z axis) and elevation above it, looking at it."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    offset = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    z = -offset
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    m = np.eye(4)
    m[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    m[:3, 3] = np.asarray(target, dtype=np.float64) + distance_m * offset
    return m


def _settle(p: Any, client: int, body: int) -> None:
    """Step until the body moved less than 1 mm in a quarter second (at most 20 s)."""
    for _ in range(_SETTLE_STEPS):
        p.stepSimulation(physicsClientId=client)
    before = np.array(p.getBasePositionAndOrientation(body, physicsClientId=client)[0])
    for _ in range((_SETTLE_MAX_STEPS - _SETTLE_STEPS) // _SETTLE_CHECK_STEPS):
        for _ in range(_SETTLE_CHECK_STEPS):
            p.stepSimulation(physicsClientId=client)
        now = np.array(p.getBasePositionAndOrientation(body, physicsClientId=client)[0])
        if np.linalg.norm(now - before) < _SETTLED_MOVE_M:
            return
        before = now


def _load_alone(p: Any, client: int, entry: CatalogEntry) -> int:
    """The object at the origin on the floor, at rest (as the scene's objects are)."""
    body = int(p.loadURDF(entry.urdf, [0.0, 0.0, 0.0], globalScaling=entry.global_scaling,
                          useFixedBase=entry.fixed, physicsClientId=client))
    if not entry.fixed:
        lo = p.getAABB(body, -1, physicsClientId=client)[0][2]
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=client)
        p.resetBasePositionAndOrientation(body, [pos[0], pos[1], pos[2] - lo + 0.005], orn,
                                          physicsClientId=client)
        p.changeDynamics(body, -1, rollingFriction=0.002, spinningFriction=0.002,
                         physicsClientId=client)
        _settle(p, client, body)
    return body


def render_body(p: Any, client: int, camera: PinholeCamera, world_from_camera: np.ndarray,
            body: int) -> tuple[np.ndarray, np.ndarray]:
    """RGB (H, W, 3) uint8 and the body's mask (H, W) bool, as ``SimWorld.render`` renders."""
    proj = p.computeProjectionMatrixFOV(camera.fov_y_deg, camera.width / camera.height,
                                        camera.near, camera.far)
    _, _, rgba, _, seg = p.getCameraImage(
        camera.width, camera.height, view_matrix(world_from_camera), proj,
        renderer=p.ER_TINY_RENDERER, flags=p.ER_SEGMENTATION_MASK_OBJECT_AND_LINKINDEX,
        physicsClientId=client)
    shape = (camera.height, camera.width)
    rgb = np.asarray(rgba, dtype=np.uint8).reshape(*shape, 4)[:, :, :3].copy()
    seg_arr = np.asarray(seg, dtype=np.int64).reshape(shape)
    return rgb, (seg_arr >= 0) & ((seg_arr & 0xFFFFFF) == body)


def _write_png(path: Path, image: np.ndarray) -> None:
    ok, data = cv2.imencode(".png", image)
    if not ok:
        raise OSError(f"{path}: PNG encoding failed")
    path.write_bytes(data.tobytes())


def _extent(p: Any, client: int, body: int) -> tuple[np.ndarray, float, VisualBox | None]:
    """Where to look and how big the object is: its visual-mesh box for the catalog's
    single-link meshes, else (a multi-link robot such as r2d2) the union of its links' boxes."""
    try:
        box = visual_box(client, body)
    except ValueError:
        boxes = [p.getAABB(body, link, physicsClientId=client)
                 for link in range(-1, p.getNumJoints(body, physicsClientId=client))]
        lo = np.min([b[0] for b in boxes], axis=0)
        hi = np.max([b[1] for b in boxes], axis=0)
        return (lo + hi) / 2, 0.5 * float(np.linalg.norm(hi - lo)), None
    return np.array(box.center_world), 0.5 * float(np.linalg.norm(box.size)), box


def _views(entry: CatalogEntry, viewpoints: list[tuple[float, float]], camera: PinholeCamera,
           fill: float) -> tuple[list[tuple[np.ndarray, np.ndarray, float]], VisualBox | None]:
    """Render ``entry`` alone on the floor, at rest, from each (azimuth, elevation) in degrees,
    at the distance where its bounding sphere spans ``fill`` of the image height.

    Returns ``(rgb, mask, distance_m)`` per viewpoint and the visual box (None when the model
    is not a single-link mesh).
    """
    import pybullet as p
    import pybullet_data

    with quiet_stdout():
        client = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=client)
        p.setGravity(0, 0, -9.81, physicsClientId=client)
        with quiet_stdout():
            p.loadURDF("plane.urdf", physicsClientId=client)
            body = _load_alone(p, client, entry)
        target, radius, box = _extent(p, client, body)
        distance = radius / math.sin(fill * math.radians(camera.fov_y_deg) / 2)
        out = []
        for azimuth, elevation in viewpoints:
            pose = look_at(target, azimuth, elevation, distance)
            out.append((*render_body(p, client, camera, pose, body), distance))
        return out, box
    finally:
        p.disconnect(physicsClientId=client)


def render_object_views(entry: CatalogEntry, viewpoints: list[tuple[float, float]],
                        camera: PinholeCamera | None = None, fill: float = _FILL,
                        ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(rgb, mask)`` of ``entry`` alone on the floor from each ``(azimuth, elevation)``
    viewpoint in degrees (any pybullet_data model, e.g. a distractor): held-out views."""
    camera = camera or ReferenceViews().camera()
    views, _ = _views(entry, viewpoints, camera, fill)
    return [(rgb, mask) for rgb, mask, _ in views]


def _write_object(entry: CatalogEntry, folder: Path, options: ReferenceViews) -> None:
    """One object's views, masks and ``object.json`` into ``folder`` (created)."""
    camera = options.camera()
    viewpoints = [(360.0 * k / options.views, options.elevation_deg)
                  for k in range(options.views)]
    views, box = _views(entry, viewpoints, camera, _FILL)
    if box is None:
        raise ValueError(f"{entry.urdf}: not a single-link mesh model; reference views are "
                         "made for the catalog's objects only")
    folder.mkdir()
    records = []
    for k, ((rgb, mask, distance), (azimuth, elevation)) in enumerate(
            zip(views, viewpoints, strict=True)):
        _write_png(folder / f"view_{k:02d}.png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        _write_png(folder / f"view_{k:02d}.mask.png", mask.astype(np.uint8) * 255)
        records.append({"file": f"view_{k:02d}.png", "azimuth_deg": azimuth,
                        "elevation_deg": elevation, "distance_m": distance})
    record = {"size_m": list(box.size), "source": {
        "generator": GENERATOR, "urdf": entry.urdf, "global_scaling": entry.global_scaling,
        "renderer": "ER_TINY_RENDERER", "camera": {
            "width": camera.width, "height": camera.height, "fov_y_deg": camera.fov_y_deg},
        "views": records}}
    text = json.dumps(rounded(record), sort_keys=True, indent=2)
    (folder / "object.json").write_text(text + "\n", encoding="utf-8")


def write_reference_views(entries: Iterable[CatalogEntry], folder: Path,
                          options: ReferenceViews | None = None) -> list[str]:
    """Render each distinct entry's views into ``folder/<name>/`` (``folder`` exists, empty).

    Each object gets a fresh session with only the floor and itself. Returns the names written.
    """
    options = options or ReferenceViews()
    unique = {e.name: e for e in entries}
    for name in sorted(unique):
        _write_object(unique[name], folder / name, options)
    return sorted(unique)


@contextmanager
def temporary_dir(final: Path) -> Iterator[Path]:
    """A hidden empty folder beside ``final``, removed unless it was renamed onto ``final``."""
    tmp = final.with_name(f".{final.name}.sim-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(tmp: Path, final: Path) -> None:
    """Put the folder ``tmp`` at ``final``, replacing an existing folder there.

    ``os.replace`` cannot replace a non-empty folder: the old one is renamed aside first and
    removed after, so ``final`` is always either the old folder or the new one.
    """
    old = final.with_name(f".{final.name}.sim-old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old.exists():
            os.replace(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def render_reference_views(entries: Iterable[CatalogEntry], out_dir: str | Path,
                           options: ReferenceViews | None = None) -> Path:
    """Write ``out_dir/<name>/view_XX.png``, ``view_XX.mask.png`` and ``object.json`` for each
    catalog entry (duplicates once), all or nothing; returns ``out_dir``."""
    out_dir = Path(out_dir)
    with temporary_dir(out_dir) as tmp:
        write_reference_views(entries, tmp, options)
        replace_dir(tmp, out_dir)
    return out_dir


__all__ = [
    "ReferenceViews",
    "look_at",
    "reference_dir",
    "render_body",
    "render_object_views",
    "render_reference_views",
    "replace_dir",
    "temporary_dir",
    "write_reference_views",
]
