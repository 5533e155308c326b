"""Synthesize the bundled sample recording and its ground truth, deterministically.

Outputs, for ``OUT.db``:

* ``OUT.db`` — a dimOS-compatible recording: ``color_image`` (jpeg, distorted fisheye renders),
  ``camera_info``, ``tf`` (world → base_link at 10 Hz, static mounts republished at 5 Hz) and
  ``pointlio_lidar`` (one Mid-360-like scan per frame in ``mid360_link``).
* ``OUT.scene.json`` — the scene and per-frame truth. All pixel quantities refer to the RECTIFIED
  image, i.e. an ideal pinhole camera with ``K_rect`` (here ``K_rect = K``; ``P = [K_rect | 0]``).
  ``bbox_xyxy`` is ``[u_min, v_min, u_max + 1, v_max + 1]`` over the visible pixels (exclusive
  right/bottom, as ``cv2.boundingRect``); ``centroid_px`` is the mean pixel coordinate (pixel
  centres at integer coordinates); ``horizontal_third`` splits ``center_px`` u at W/3 and 2W/3.
* ``OUT.truth.npz`` — ``id_maps`` uint8 (frames, H, W): object id per rectified pixel, 255 for none.

The seed drives the timestamp jitter, which frames get a late LiDAR scan and the LiDAR range noise;
the scene layout itself is fixed so the question families always have answers. Seeded scenes, the
reference rig's format and long recordings are :mod:`eval_assets.synth.stream`'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.atomic import write_bytes_atomic
from eval_assets.jsonio import write_json
from eval_assets.recording import RecordingWriter
from eval_assets.recording.messages import CameraInfo
from eval_assets.recording.names import (
    CAMERA_INFO_STREAM,
    IMAGE_STREAM,
    LIDAR_STREAM,
    TF_STREAM,
)
from eval_assets.synth.render import (
    SceneRaycaster,
    View,
    fisheye_directions,
    pinhole_directions,
)
from eval_assets.synth.scene import CameraModel, Scene, sample_scene
from eval_assets.synth.sensors import (
    add_sensor_streams,
    camera_image,
    camera_info,
    point_cloud,
    pose7,
    round_us,
    static_tfs,
    world_tf,
)
from eval_assets.synth.truth import npz_bytes, rounded, sidecar_paths, visible_object

GENERATOR = "eval_assets.synth.sample/1"
DEFAULT_SEED = 0
DEFAULT_FRAMES = 24
T0 = 1_700_000_000.0

_IMAGE_PERIOD = 0.5
_IMAGE_JITTER = 0.02
_TF_PERIOD = 0.1
_STATIC_TF_PERIOD = 0.2
_LIDAR_NEAR_DT = 0.03  # |image − scan| for matched frames: ≤ 6 mm of robot motion
_LIDAR_LATE_DT = (0.12, 0.20)  # |image − scan| for the frames whose scan is too far to match
_LATE_FRAMES = 3


@dataclass(frozen=True)
class Timeline:
    """Message times (epoch seconds, rounded to microseconds) of one synthesized recording."""

    image_ts: tuple[float, ...]
    lidar_ts: tuple[float, ...]  # one scan per image, same order
    tf_ts: tuple[float, ...]  # world -> base_link
    static_tf_ts: tuple[float, ...]  # base_link -> camera_optical, base_link -> mid360_link


@dataclass(frozen=True)
class SampleOutputs:
    """Where :func:`synthesize_sample` wrote its three files, and how long rendering took."""

    db: Path
    scene_json: Path
    truth_npz: Path
    render_seconds: float


def make_timeline(frames: int, seed: int, t0: float = T0) -> Timeline:
    """Image times at ≈2 Hz with ±20 ms jitter and one LiDAR scan per image.

    ``min(3, frames // 4)`` frames (chosen by the seed) get their scan 0.12–0.2 s away, so a 0.1 s
    sync window leaves them unmatched; every other scan is within 0.03 s of its image.
    """
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}; pass --frames N with N ≥ 1")
    jitter_rng, late_rng, dt_rng = (np.random.default_rng(s)
                                    for s in np.random.SeedSequence(seed).spawn(3))
    nominal = t0 + 0.25 + _IMAGE_PERIOD * np.arange(frames)
    image_ts = nominal + jitter_rng.uniform(-_IMAGE_JITTER, _IMAGE_JITTER, frames)
    late = set(late_rng.choice(frames, size=min(_LATE_FRAMES, frames // 4), replace=False).tolist())
    near = dt_rng.uniform(-_LIDAR_NEAR_DT, _LIDAR_NEAR_DT, frames)
    far = dt_rng.uniform(*_LIDAR_LATE_DT, frames) * dt_rng.choice([-1.0, 1.0], frames)
    lidar_dt = np.array([far[i] if i in late else near[i] for i in range(frames)])
    t_end = t0 + _IMAGE_PERIOD * frames + 0.5
    n_tf = round((t_end - t0) / _TF_PERIOD)
    n_static = round((t_end - t0) / _STATIC_TF_PERIOD)
    return Timeline(
        image_ts=tuple(round_us(t) for t in image_ts),
        lidar_ts=tuple(round_us(t) for t in image_ts + lidar_dt),
        tf_ts=tuple(round_us(t0 + _TF_PERIOD * k) for k in range(n_tf + 1)),
        static_tf_ts=tuple(round_us(t0 + _STATIC_TF_PERIOD * k) for k in range(n_static + 1)),
    )


def world_from_camera(scene: Scene, t: float) -> np.ndarray:
    """Pose (4×4) of ``camera_optical`` in ``world`` at epoch time ``t``."""
    return scene.path.world_from_base(t) @ scene.base_from_camera


def world_from_lidar(scene: Scene, t: float) -> np.ndarray:
    """Pose (4×4) of ``mid360_link`` in ``world`` at epoch time ``t``."""
    return scene.path.world_from_base(t) @ scene.base_from_lidar


def scene_camera_info(scene: Scene, ts: float, seq: int) -> CameraInfo:
    """The ``camera_info`` message of a synthesized scene's (equidistant fisheye) camera."""
    cam = scene.camera
    return camera_info(ts, seq, width=cam.width, height=cam.height,
                       distortion_model="equidistant", d=cam.D, k=cam.K, p=cam.P)


def frame_objects(scene: Scene, camera_from_world: np.ndarray, view: View) -> list[dict[str, Any]]:
    """Per-object truth of one ideal pinhole (``K_rect``) view; objects without pixels omitted."""
    cam = scene.camera
    rows = (visible_object(obj.id, obj.name, obj.center, cam.K_rect, cam.width,
                           camera_from_world, view.ids, view.distance) for obj in scene.objects)
    return [row for row in rows if row is not None]


def camera_record(cam: CameraModel) -> dict[str, Any]:
    """The camera as scene.json records it (the same keys for every profile)."""
    return {
        "width": cam.width,
        "height": cam.height,
        "distortion_model": "equidistant",
        "K": cam.K.tolist(),
        "D": cam.D.tolist(),
        "K_rect": cam.K_rect.tolist(),
    }


def _scene_header(scene: Scene, seed: int) -> dict[str, Any]:
    cam = scene.camera
    return {
        "generator": GENERATOR,
        "seed": seed,
        "camera": camera_record(cam),
        "objects": [
            {"id": o.id, "name": o.name, "shape": o.shape, "color": o.color, "rgb": list(o.rgb),
             "center_world": list(o.center), "size": list(o.size)}
            for o in scene.objects
        ],
    }


def synthesize_sample(out_db: str | Path, seed: int = DEFAULT_SEED,
                      frames: int = DEFAULT_FRAMES) -> SampleOutputs:
    """Render the sample scene and write ``out_db`` plus its ``.scene.json`` / ``.truth.npz``.

    Existing files at those paths are replaced (each write is atomic). Same arguments, same bytes.
    """
    out_db = Path(out_db)
    if out_db.suffix != ".db":
        raise ValueError(f"{out_db}: a recording file name must end in .db, e.g. sample.db")
    out_db.parent.mkdir(parents=True, exist_ok=True)
    scene_json, truth_npz = sidecar_paths(out_db)
    scene = sample_scene(frames=frames, t0=T0)
    timeline = make_timeline(frames, seed, T0)
    noise_rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))

    started = time.perf_counter()
    raycaster = SceneRaycaster(scene)
    fisheye = fisheye_directions(scene.camera)
    pinhole = pinhole_directions(scene.camera.K_rect, scene.camera.width, scene.camera.height)

    # (ts, stream rank, stream, message, pose); sorted by time like a live recording's inserts.
    rows: list[tuple[float, int, str, Any, tuple[float, ...] | None]] = []
    id_maps = np.empty((frames, scene.camera.height, scene.camera.width), dtype=np.uint8)
    truth_frames = []
    for i, (t_img, t_lidar) in enumerate(zip(timeline.image_ts, timeline.lidar_ts, strict=True)):
        w_cam = world_from_camera(scene, t_img)
        cam_from_world = np.linalg.inv(w_cam)
        distorted = raycaster.render(w_cam, fisheye)
        assert distorted.rgb is not None
        rectified = raycaster.render(w_cam, pinhole, colour=False)
        id_maps[i] = rectified.ids
        robot = pose7(scene.path.world_from_base(t_img))
        rows.append((t_img, 0, CAMERA_INFO_STREAM, scene_camera_info(scene, t_img, i), None))
        rows.append((t_img, 1, IMAGE_STREAM, camera_image(distorted.rgb, t_img, i), robot))
        scan = raycaster.lidar_scan(world_from_lidar(scene, t_lidar), scene.lidar_elevations_deg,
                                    scene.lidar_azimuth_step_deg, noise_rng)
        rows.append((t_lidar, 3, LIDAR_STREAM, point_cloud(scan, t_lidar, i),
                     pose7(scene.path.world_from_base(t_lidar))))
        truth_frames.append({
            "index": i,
            "image_ts": t_img,
            "lidar_ts": t_lidar,
            "lidar_dt": t_lidar - t_img,
            "camera_from_world": cam_from_world.tolist(),
            "objects": frame_objects(scene, cam_from_world, rectified),
        })
    render_seconds = time.perf_counter() - started

    for k, t in enumerate(timeline.tf_ts):
        rows.append((t, 2, TF_STREAM, world_tf(t, scene.path.world_from_base(t), k), None))
    for k, t in enumerate(timeline.static_tf_ts):
        for mount in static_tfs(t, scene.base_from_camera, scene.base_from_lidar, k):
            rows.append((t, 2, TF_STREAM, mount, None))
    # Stable sort: equal (ts, rank) rows keep their construction order.
    rows.sort(key=lambda r: (r[0], r[1]))

    with RecordingWriter(out_db, overwrite=True) as writer:
        add_sensor_streams(writer)
        for ts, _, stream, message, pose in rows:
            writer.write(stream, ts, message, pose=pose)

    truth = _scene_header(scene, seed)
    truth["frames"] = truth_frames
    write_json(scene_json, rounded(truth), sort_keys=True)
    write_bytes_atomic(truth_npz, npz_bytes({"id_maps": id_maps}))
    return SampleOutputs(out_db, scene_json, truth_npz, render_seconds)
