"""Simulated recordings: a PyBullet scene driven by a husky, written as a dimOS recording + truth.

:func:`simulate_recording` is what ``eval-assets recording simulate`` calls. For ``OUT.db``:

* ``OUT.db`` — the synthesizer's streams and frames: ``color_image`` (jpeg, pinhole renders of
  ``p.ER_TINY_RENDERER``), ``camera_info`` (``plumb_bob``, zero distortion, ``P = [K | 0]``, so
  rectifying is the identity), ``pointlio_lidar`` (a 16 × 1024 ring LiDAR by ``p.rayTestBatch``
  in ``mid360_link``, the husky's own hits dropped), ``tf`` (``world → base_link`` at 10 Hz, the
  static mounts at 5 Hz). The robot's pose (odometry) rides on every image and scan row, as in
  the synthesizer's recordings.
* ``OUT.scene.json`` — the synthesizer's schema (camera, objects with ``name``/``size``/
  ``center_world``, per-frame ``camera_from_world`` and visible objects with pixels, boxes and
  distances) plus, per object, what recomputes it with PyBullet alone: ``urdf`` (inside
  ``pybullet_data``), ``global_scaling``, ``base_position``, ``base_orientation`` (x, y, z, w;
  the centre-of-mass frame once settled: rebuild with ``loadURDF(urdf, globalScaling=...)`` then
  ``resetBasePositionAndOrientation(body, base_position, base_orientation)``, as ``loadURDF``'s
  own position is the URDF link frame's). ``size`` is the visual mesh's extents in that frame;
  ``center_world`` the centre of that box in the world.
* ``OUT.truth.npz`` — ``id_maps`` (uint8, frames × H × W, object id per pixel from the
  segmentation buffer, 255 for none: floor, husky, distractors) and ``frame_index``.
* ``OUT.objects/`` (when asked, as the command line does) — reference views of each catalog
  object in the scene from viewpoints the drive does not use, the folder a team's taught names
  are read from (:mod:`eval_assets.sim.references`); distractors get none.

The husky is placed kinematically (``resetBasePositionAndOrientation`` at each message time),
not driven by wheel velocities: the objects are settled by physics first and then never touched,
so one ``center_world`` per object is the truth of every frame, and the path (turns, the stop,
the revisit) is exactly the designed one rather than whatever wheel slip makes of it. Same seed,
same options: the same scene, poses and truth (PyBullet in DIRECT mode is deterministic).
Nothing is left at the output paths unless all the files were written.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.recording import RecordingWriter
from eval_assets.recording.messages import CameraInfo
from eval_assets.recording.names import CAMERA_INFO_STREAM, IMAGE_STREAM, LIDAR_STREAM, TF_STREAM
from eval_assets.sim.catalog import DISTRACTORS, SimConfigError, entries_for
from eval_assets.sim.geometry import PinholeCamera, pose_matrix, world_aabb
from eval_assets.sim.path import PATHS, SPEED_M_S, DrivePath, drive_path
from eval_assets.sim.references import (
    ReferenceViews,
    reference_dir,
    replace_dir,
    temporary_dir,
    write_reference_views,
)
from eval_assets.sim.world import (
    LIDAR_RANGE_M,
    PlacedObject,
    SimConfig,
    SimWorld,
    lidar_directions,
)
from eval_assets.synth import sensors
from eval_assets.synth.scene import homogeneous, rot_y
from eval_assets.synth.truth import npz_bytes, rounded, sidecar_paths, visible_object

GENERATOR = "eval_assets.sim.simulate/1"
T0 = 1_700_000_000.0
RESOLUTIONS = {"640x480": (640, 480), "1280x720": (1280, 720)}
MAX_OBJECTS = 64

_FIRST_IMAGE_S = 0.25
_LIDAR_OFFSET_S = 0.013
_TF_PERIOD_S = 0.1
_STATIC_TF_PERIOD_S = 0.2
_FOV_Y_DEG = 60.0
_NEAR, _FAR = 0.1, 30.0

# The optical frame in base axes (optical z = base x, x = −base y, y = −base z), pitched down.
_CAMERA_PITCH_RAD = math.radians(10.0)
_OPTICAL_LEVEL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


# A camera on a mast at the husky's front (its top plate is 0.40 m high), a LiDAR above it.
BASE_FROM_CAMERA = homogeneous(rot_y(_CAMERA_PITCH_RAD) @ _OPTICAL_LEVEL, (0.30, 0.0, 0.65))
BASE_FROM_LIDAR = homogeneous(np.eye(3), (0.0, 0.0, 0.75))


@dataclass(frozen=True)
class SimOutputs:
    """What :func:`simulate_recording` wrote, and where the time went."""

    db: Path
    scene_json: Path
    truth_npz: Path
    frames: int
    lidar_scans: int
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)
    objects_dir: Path | None = None
    """The reference views (``OUT.objects``), when they were asked for."""


def check_config(out_db: Path, config: SimConfig) -> None:
    """Refuse what cannot work before anything is simulated (message: the problem and the fix)."""
    if out_db.suffix != ".db":
        raise SimConfigError(f"{out_db}: a recording file name must end in .db, e.g. sim.db")
    if config.frames < 1:
        raise SimConfigError(f"--frames must be at least 1, got {config.frames}; pass "
                             "--frames N with N ≥ 1")
    if config.resolution not in RESOLUTIONS:
        raise SimConfigError(f"--resolution {config.resolution!r} is not offered; use one of "
                             f"{', '.join(RESOLUTIONS)}")
    if config.path not in PATHS:
        raise SimConfigError(f"unknown --path {config.path!r}; use one of {', '.join(PATHS)}")
    if not 1 <= config.objects <= MAX_OBJECTS:
        raise SimConfigError(f"--objects must be 1..{MAX_OBJECTS} (ids are uint8 with 255 for "
                             f"none), got {config.objects}")
    if config.distractors < 0:
        raise SimConfigError(f"--distractors must be ≥ 0, got {config.distractors}")
    if config.lidar_rings < 1 or config.lidar_columns < 1:
        raise SimConfigError(f"the LiDAR needs ≥ 1 ring and column, got {config.lidar_rings} × "
                             f"{config.lidar_columns}")
    low, high = config.lidar_fov_deg
    if not -90.0 <= low <= high <= 90.0:
        raise SimConfigError(f"--lidar-fov-deg {low:g},{high:g}: elevations must satisfy "
                             "-90 ≤ lowest ≤ highest ≤ 90. Fix: pass the lowest first, e.g. "
                             "--lidar-fov-deg=-15,15")
    entries_for(list(config.names), config.objects)  # unknown names fail here
    folder = out_db.parent
    if not folder.is_dir():
        raise SimConfigError(f"{out_db}: folder {folder} does not exist. Fix: create it "
                             "(mkdir -p) or write the recording elsewhere")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SimConfigError(f"{out_db}: folder {folder} is not writable by this user. Fix: "
                             "choose a folder you can write, or change its permissions")
    for path in (out_db, *sidecar_paths(out_db)):
        if path.is_dir():
            raise SimConfigError(f"{path} is a folder; the recording and its truth files need "
                                 "that name. Fix: choose another output name")
        if path.exists() and not os.access(path, os.W_OK):
            raise SimConfigError(f"{path} exists and is not writable. Fix: remove it or choose "
                                 "another output name")


# --- messages ----------------------------------------------------------------------------------


def _camera_info(camera: PinholeCamera, ts: float, seq: int) -> CameraInfo:
    k = camera.K
    return sensors.camera_info(ts, seq, width=camera.width, height=camera.height,
                       distortion_model="plumb_bob", d=(0.0, 0.0, 0.0, 0.0, 0.0), k=k,
                       p=np.hstack([k, np.zeros((3, 1))]))


def frame_objects(objects: list[PlacedObject], camera: PinholeCamera,
                  camera_from_world: np.ndarray, ids: np.ndarray,
                  distance: np.ndarray) -> list[dict[str, Any]]:
    """Per-object truth of one view, in the synthesizer's keys; objects without pixels omitted."""
    rows = (visible_object(obj.id, obj.entry.name, obj.box.center_world, camera.K, camera.width,
                           camera_from_world, ids, distance) for obj in objects)
    return [row for row in rows if row is not None]


def _header(config: SimConfig, world: SimWorld, camera: PinholeCamera,
            frames: int) -> dict[str, Any]:
    import pybullet as p

    k = camera.K.tolist()
    data_dir = world.data_dir
    return {
        "generator": GENERATOR,
        "seed": config.seed,
        "engine": {"name": "pybullet", "version": p.getAPIVersion(),
                   "renderer": "ER_TINY_RENDERER", "pybullet_data": str(data_dir)},
        "camera": {"width": camera.width, "height": camera.height,
                   "distortion_model": "plumb_bob", "K": k, "D": [0.0] * 5, "K_rect": k,
                   "fov_y_deg": camera.fov_y_deg, "near": camera.near, "far": camera.far},
        "objects": [{
            "id": o.id, "name": o.entry.name, "urdf": o.entry.urdf,
            "global_scaling": o.entry.global_scaling, "fixed_base": o.entry.fixed,
            "base_position": list(o.base_position),
            "base_orientation": list(o.base_orientation),
            "size": list(o.box.size), "center_world": list(o.box.center_world),
            "top_z": o.box.top_world,
        } for o in world.objects],
        # Not in the vocabulary, but the LiDAR finds them like any object: their boxes let the
        # truth check match a marked object that is one (eval_assets.vqa.spatial.truth).
        "distractors": [{"urdf": DISTRACTORS[i % len(DISTRACTORS)].urdf,
                         "name": DISTRACTORS[i % len(DISTRACTORS)].name,
                         "size": list(size), "center_world": list(center)}
                        for i, (size, center) in enumerate(world_aabb(world.client, b)
                                                           for b in world.distractor_bodies)],
        # With robot.base_from_camera and the TF rate and first stamp, the segments rebuild the
        # camera at every TF sample (eval_assets.vqa.spatial.truth.scene_camera): the motion
        # families' path and turn sum over those samples, not over the images.
        "path": {"name": config.path, "t_start": world.path.t_start,
                 "duration_s": world.path.duration, "speed_mps": SPEED_M_S,
                 "segments": [vars(s) for s in world.path.segments]},
        "rates_hz": {"tf_world_base_link": 1.0 / _TF_PERIOD_S,
                     "tf_static": 1.0 / _STATIC_TF_PERIOD_S},
        "tf_first_stamp": T0,
        "robot": {"urdf": "husky/husky.urdf", "placement": "kinematic",
                  "base_from_camera": BASE_FROM_CAMERA.tolist(),
                  "base_from_lidar": BASE_FROM_LIDAR.tolist()},
        "lidar": {"rings": config.lidar_rings, "columns": config.lidar_columns,
                  "fov_deg": list(config.lidar_fov_deg), "range_m": LIDAR_RANGE_M},
        "frame_count": frames,
        "truth_every": 1,
    }


# --- writing -----------------------------------------------------------------------------------


def image_times(path: DrivePath, frames: int) -> list[float]:
    """Image stamps spread over the whole drive (first at its start, last at its end)."""
    if frames == 1:
        return [sensors.round_us(path.t_start)]
    step = path.duration / (frames - 1)
    return [sensors.round_us(path.t_start + i * step) for i in range(frames)]


@contextmanager
def _temporary(path: Path) -> Iterator[Path]:
    """A hidden temporary beside ``path``, removed unless it was renamed onto ``path``."""
    tmp = path.with_name(f".{path.name}.sim-tmp")
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def simulate_recording(out_db: str | Path, config: SimConfig | None = None,
                       references: ReferenceViews | None = None) -> SimOutputs:
    """Simulate the scene of ``config`` and write ``out_db`` with its ``.scene.json`` and
    ``.truth.npz`` (replacing existing ones, all or nothing). Same config, same truth.

    With ``references``, also the reference views of the scene's catalog objects in
    ``OUT.objects/`` (replaced with the rest; without, an existing folder is left alone)."""
    config = config or SimConfig()
    out_db = Path(out_db)
    check_config(out_db, config)
    objects_dir = reference_dir(out_db) if references else None
    if objects_dir is not None and objects_dir.exists() and not objects_dir.is_dir():
        raise SimConfigError(f"{objects_dir} is a file; the reference views need that name. "
                             "Fix: remove it, choose another output name, or pass "
                             "--reference-views 0")
    scene_json, truth_npz = sidecar_paths(out_db)
    width, height = RESOLUTIONS[config.resolution]
    camera = PinholeCamera(width, height, _FOV_Y_DEG, _NEAR, _FAR)
    path = drive_path(config.path, T0 + _FIRST_IMAGE_S)
    started = time.perf_counter()
    timings = {"setup": 0.0, "render": 0.0, "lidar": 0.0, "write": 0.0}
    world = SimWorld(config, path)
    timings["setup"] = time.perf_counter() - started
    directions = lidar_directions(config.lidar_rings, config.lidar_columns, config.lidar_fov_deg)
    img_ts = image_times(path, config.frames)
    scans = 0
    with ExitStack() as stack:
        stack.callback(world.close)
        json_tmp = stack.enter_context(_temporary(scene_json))
        npz_tmp = stack.enter_context(_temporary(truth_npz))
        objects_tmp = (stack.enter_context(temporary_dir(objects_dir))
                       if objects_dir is not None else None)
        writer = stack.enter_context(RecordingWriter(out_db, overwrite=True))
        # The writer renames its file into place on a clean exit; until then (and on any
        # failure) out_db is untouched, and the truth files are temporaries.
        sensors.add_sensor_streams(writer)
        events: list[tuple[float, int, str, int]] = []
        for i, t in enumerate(img_ts):
            events.append((t, 0, "image", i))
            events.append((sensors.round_us(t + _LIDAR_OFFSET_S), 2, "lidar", i))
        end = img_ts[-1] + 0.25
        events += [(sensors.round_us(T0 + k * _TF_PERIOD_S), 1, "tf", k)
                   for k in range(math.ceil((end - T0) / _TF_PERIOD_S) + 1)]
        events += [(sensors.round_us(T0 + k * _STATIC_TF_PERIOD_S), 1, "tf_static", k)
                   for k in range(math.ceil((end - T0) / _STATIC_TF_PERIOD_S) + 1)]
        events.sort()
        ray_lengths = camera.ray_lengths()
        id_maps = np.empty((config.frames, height, width), dtype=np.uint8)
        truth_frames: list[dict[str, Any]] = []
        for ts, _, kind, index in events:
            if kind == "tf":
                writer.write(TF_STREAM, ts, sensors.world_tf(ts, path.world_from_base(ts), index))
            elif kind == "tf_static":
                for mount in sensors.static_tfs(ts, BASE_FROM_CAMERA, BASE_FROM_LIDAR, index):
                    writer.write(TF_STREAM, ts, mount)
            elif kind == "image":
                t0 = time.perf_counter()
                w_base = world.place_husky(ts)
                w_cam = w_base @ BASE_FROM_CAMERA
                rgb, ids, depth = world.render(camera, w_cam)
                timings["render"] += time.perf_counter() - t0
                id_maps[index] = ids
                cam_from_world = np.linalg.inv(w_cam)
                truth_frames.append({
                    "index": index, "image_ts": ts,
                    "lidar_ts": sensors.round_us(ts + _LIDAR_OFFSET_S),
                    "lidar_dt": _LIDAR_OFFSET_S, "camera_from_world": cam_from_world.tolist(),
                    "objects": frame_objects(world.objects, camera, cam_from_world, ids,
                                             depth * ray_lengths)})
                writer.write(CAMERA_INFO_STREAM, ts, _camera_info(camera, ts, index))
                writer.write(IMAGE_STREAM, ts, sensors.camera_image(rgb, ts, index),
                             pose=sensors.pose7(w_base))
            else:
                t0 = time.perf_counter()
                w_base = world.place_husky(ts)
                scan = world.lidar_scan(w_base @ BASE_FROM_LIDAR, directions)
                timings["lidar"] += time.perf_counter() - t0
                writer.write(LIDAR_STREAM, ts, sensors.point_cloud(scan, ts, index),
                             pose=sensors.pose7(w_base))
                scans += 1
        if objects_tmp is not None:
            t0 = time.perf_counter()
            write_reference_views([o.entry for o in world.objects], objects_tmp, references)
            timings["references"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        header = _header(config, world, camera, config.frames)
        text = json.dumps(rounded({**header, "frames": truth_frames}), sort_keys=True, indent=2)
        json_tmp.write_text(text + "\n", encoding="utf-8")
        npz_tmp.write_bytes(npz_bytes({
            "id_maps": id_maps, "frame_index": np.arange(config.frames, dtype=np.int64)}))
        try:
            os.replace(npz_tmp, truth_npz)
            os.replace(json_tmp, scene_json)
            if objects_tmp is not None and objects_dir is not None:
                replace_dir(objects_tmp, objects_dir)
            writer.close()  # commits and renames the recording into place
        except BaseException:
            # No recording without its truth, no truth of a recording that is not there.
            for done in (truth_npz, scene_json, out_db):
                done.unlink(missing_ok=True)
            if objects_dir is not None:
                shutil.rmtree(objects_dir, ignore_errors=True)
            raise
        timings["write"] = time.perf_counter() - t0
    return SimOutputs(out_db, scene_json, truth_npz, config.frames, scans,
                      time.perf_counter() - started, timings, objects_dir)


__all__ = [
    "BASE_FROM_CAMERA",
    "BASE_FROM_LIDAR",
    "RESOLUTIONS",
    "ReferenceViews",
    "SimConfig",
    "SimConfigError",
    "SimOutputs",
    "SimWorld",
    "check_config",
    "drive_path",
    "image_times",
    "lidar_directions",
    "pose_matrix",
    "simulate_recording",
]
