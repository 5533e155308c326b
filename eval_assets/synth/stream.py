"""Synthesize recordings of any length, streamed: rig profile, seeded scenes, bounded memory.

:func:`synthesize_recording` is what ``eval-assets recording synthesize`` calls. The ``sample``
profile with no scene seed is the bundled sample, written by
:func:`~eval_assets.synth.sample.synthesize_sample` exactly as before (24 frames at 2 Hz, one
LiDAR scan per image). Everything else goes through :func:`synthesize_streamed`:

* **Profiles.** ``rig`` is the reference rig (Unitree Go2 + Livox Mid-360): 1280×720 equidistant
  fisheye at 15 Hz (±3 ms jitter), a Mid-360-like non-repeating scan of 20 000 points at 10 Hz in
  ``mid360_link`` (±2 ms jitter, 1 % of scans dropped), TF ``world → base_link`` at 20 Hz and the
  static mounts ``base_link → camera_optical`` / ``mid360_link`` republished at 5 Hz. ``sample``
  with a scene seed keeps the sample's 640×480 camera at 2 Hz and its ring scans, at 2 Hz too,
  and by default runs one full lap of the scene's loop (≈ 70–125 frames), so objects enter and
  leave view.
* **Seeded scenes.** The scene seed (for ``rig`` the noise seed unless given) draws a new room,
  object layout, colours, shapes, distractors and robot loop
  (:func:`~eval_assets.synth.seeded.seeded_scene`); the noise seed drives jitter, dropped scans
  and range noise.
* **Streaming.** Messages are rendered and appended one at a time in time order (a merge of the
  per-stream timelines, each a generator), ``scene.json`` is written frame by frame and the id
  maps go straight into the ``.npz`` entry, so memory does not grow with the duration; only the
  SQLite file does (≈ 4 MB/s for ``rig``, the LiDAR points being most of it).
* **Truth.** ``OUT.scene.json`` holds the scene (room, objects, distractors, path, rates) and the
  per-frame truth of every ``truth_every``-th frame (``rig``: 15, i.e. 1 Hz); ``OUT.truth.npz``
  holds ``id_maps`` (uint8, truth frames × H × W, object id per RECTIFIED pixel, 255 for none,
  distractors included) and ``frame_index`` (the recording frame of each map).
  ``truth_every = 0`` writes the scene without per-frame truth and no ``.npz``.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import textwrap
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from eval_assets import progress
from eval_assets.errors import InputError
from eval_assets.recording import RecordingWriter
from eval_assets.recording.names import (
    CAMERA_INFO_STREAM,
    IMAGE_STREAM,
    LIDAR_FRAME,
    LIDAR_STREAM,
    TF_STREAM,
)
from eval_assets.synth.render import (
    SceneRaycaster,
    fisheye_directions,
    lidar_directions,
    mid360_directions,
    pinhole_directions,
)
from eval_assets.synth.sample import (
    DEFAULT_FRAMES,
    DEFAULT_SEED,
    T0,
    camera_record,
    frame_objects,
    scene_camera_info,
    synthesize_sample,
    world_from_camera,
    world_from_lidar,
)
from eval_assets.synth.scene import CameraModel, Scene, TourPath, rig_camera, sample_camera
from eval_assets.synth.seeded import seeded_scene
from eval_assets.synth.sensors import (
    add_sensor_streams,
    camera_image,
    point_cloud,
    pose7,
    round_us,
    static_tfs,
    world_tf,
)
from eval_assets.synth.truth import npz_entry, rounded, sidecar_paths

GENERATOR = "eval_assets.synth.stream/1"


class SynthConfigError(InputError, ValueError):
    """A combination of synthesizer options that cannot work; the message names the fix."""


@dataclass(frozen=True)
class Profile:
    """A sensor rig: camera, message rates and jitter, LiDAR pattern, default length."""

    name: str
    camera: Callable[[], CameraModel]
    image_rate_hz: float
    image_jitter_s: float
    lidar_rate_hz: float
    lidar_jitter_s: float
    lidar_drop_fraction: float
    lidar_points: int  # points per scan of the Mid-360-like pattern; 0: the sample's rings
    tf_rate_hz: float
    static_tf_rate_hz: float
    default_frames: int
    default_truth_every: int


PROFILES: dict[str, Profile] = {
    "sample": Profile("sample", sample_camera, image_rate_hz=2.0, image_jitter_s=0.02,
                      lidar_rate_hz=2.0, lidar_jitter_s=0.02, lidar_drop_fraction=0.0,
                      lidar_points=0, tf_rate_hz=10.0, static_tf_rate_hz=5.0,
                      default_frames=DEFAULT_FRAMES, default_truth_every=1),
    # The TF rate is twice the sample's: at 0.45 m/s a pose sample ≤ 25 ms from an image is
    # within 12 mm of the robot's true position (readers take the nearest, they never interpolate).
    "rig": Profile("rig", rig_camera, image_rate_hz=15.0, image_jitter_s=0.003,
                   lidar_rate_hz=10.0, lidar_jitter_s=0.002, lidar_drop_fraction=0.01,
                   lidar_points=20_000, tf_rate_hz=20.0, static_tf_rate_hz=5.0,
                   # 120 s: a full lap of every seeded tour (laps run 48-95 s on scene seeds
                   # 1-40) with its stop and the return to the start; at the default frame
                   # selection (the sharpest frame per 5 s) that is 24 frames, enough for every
                   # motion family (60 s gave 12 frames and no same_place case on 2 of 3 seeds).
                   default_frames=1800, default_truth_every=15),
}

# Images start a quarter second after t0 (TF is already there); scans are offset by 13 ms so no
# scan shares a stamp with an image.
_FIRST_IMAGE_S = 0.25
_LIDAR_OFFSET_S = 0.013
_TF_TAIL_S = 0.25
_STREAM_ORDER = ("image", "tf", "lidar")  # ties at one stamp: calibration and image first


@dataclass(frozen=True)
class SynthOutputs:
    """What :func:`synthesize_recording` wrote and how long the rendering took."""

    db: Path
    scene_json: Path
    truth_npz: Path | None  # None when no per-frame truth was asked for
    frames: int
    lidar_scans: int
    render_seconds: float


def lap_frames(profile: Profile, scene_seed: int) -> int:
    """Camera frames that cover one full lap of ``seeded_scene(scene_seed)``'s loop.

    A seeded sample recording defaults to this rather than the fixed sample's 24 frames: 24
    frames at 2 Hz are a quarter of a lap or less, too little of the room for the multi-frame
    families to find objects entering and leaving view.
    """
    path = seeded_scene(scene_seed, profile.camera(), t0=T0).path
    assert isinstance(path, TourPath)
    lap_s = path.lap_duration_s
    return max(1, math.ceil((lap_s - _FIRST_IMAGE_S) * profile.image_rate_hz) + 1)


def frames_for(profile: Profile, frames: int | None, duration_s: float | None,
               scene_seed: int | None = None) -> int:
    """Camera frames of a recording: ``frames``, else ``duration_s`` × rate, else the default
    (one lap of the loop for a seeded sample scene, ``profile.default_frames`` otherwise)."""
    if frames is not None and duration_s is not None:
        raise SynthConfigError("give --frames or --duration-s, not both")
    if duration_s is not None:
        if not math.isfinite(duration_s) or duration_s <= 0:
            raise SynthConfigError(f"--duration-s must be > 0, got {duration_s}")
        frames = max(1, round(duration_s * profile.image_rate_hz))
    if frames is None:
        frames = (lap_frames(profile, scene_seed)
                  if profile.name == "sample" and scene_seed is not None
                  else profile.default_frames)
    if frames < 1:
        raise SynthConfigError(f"frames must be at least 1, got {frames}; pass --frames N ≥ 1")
    return frames


def synthesize_recording(out_db: str | Path, *, profile: str = "sample", seed: int = DEFAULT_SEED,
                         scene_seed: int | None = None, frames: int | None = None,
                         duration_s: float | None = None,
                         truth_every: int | None = None) -> SynthOutputs:
    """Write a synthetic recording and its truth; the command line's entry point.

    ``profile="sample"`` without ``scene_seed`` is the bundled sample scene (byte for byte the
    committed sample for seed 0 and 24 frames). Otherwise the scene is
    ``seeded_scene(scene_seed)`` (``rig`` uses ``seed`` when ``scene_seed`` is None) and the
    recording is streamed; see the module docstring.
    """
    if profile not in PROFILES:
        raise SynthConfigError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    spec = PROFILES[profile]
    n = frames_for(spec, frames, duration_s, scene_seed)
    if scene_seed is None and profile == "sample":
        if truth_every not in (None, 1):
            raise SynthConfigError("the fixed sample scene keeps truth for every frame; drop "
                                   "--truth-every or pass --scene-seed")
        out = synthesize_sample(out_db, seed=seed, frames=n)
        return SynthOutputs(out.db, out.scene_json, out.truth_npz, n, n, out.render_seconds)
    return synthesize_streamed(out_db, spec, seed=seed,
                               scene_seed=seed if scene_seed is None else scene_seed, frames=n,
                               truth_every=spec.default_truth_every if truth_every is None
                               else truth_every)


# --- timelines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    ts: float
    order: int
    kind: str
    index: int


def _image_events(spec: Profile, frames: int, rng: np.random.Generator) -> Iterator[_Event]:
    for i in range(frames):
        jitter = rng.uniform(-spec.image_jitter_s, spec.image_jitter_s)
        yield _Event(round_us(T0 + _FIRST_IMAGE_S + i / spec.image_rate_hz + jitter), 0, "image", i)


def _last_nominal_image(spec: Profile, frames: int) -> float:
    return T0 + _FIRST_IMAGE_S + (frames - 1) / spec.image_rate_hz


def _lidar_events(spec: Profile, frames: int, rng: np.random.Generator) -> Iterator[_Event]:
    """Scans from the first image to just past the last, a few dropped; index = scan number."""
    end = _last_nominal_image(spec, frames) + 0.5 / spec.lidar_rate_hz
    j = 0
    while (nominal := T0 + _FIRST_IMAGE_S + _LIDAR_OFFSET_S + j / spec.lidar_rate_hz) <= end:
        jitter = rng.uniform(-spec.lidar_jitter_s, spec.lidar_jitter_s)
        dropped = rng.uniform() < spec.lidar_drop_fraction
        if not dropped:
            yield _Event(round_us(nominal + jitter), 2, "lidar", j)
        j += 1


def _tf_events(spec: Profile, frames: int) -> Iterator[_Event]:
    """World → base_link at ``tf_rate_hz``; static mounts at ``static_tf_rate_hz`` (their own
    sequence numbers), both from ``T0`` to a little past the last message."""
    end = _last_nominal_image(spec, frames) + _TF_TAIL_S
    moving = (_Event(round_us(T0 + k / spec.tf_rate_hz), 1, "tf", k)
              for k in range(math.ceil((end - T0) * spec.tf_rate_hz) + 1))
    static = (_Event(round_us(T0 + k / spec.static_tf_rate_hz), 1, "tf_static", k)
              for k in range(math.ceil((end - T0) * spec.static_tf_rate_hz) + 1))
    return heapq.merge(moving, static, key=lambda e: (e.ts, e.order))


def timeline(spec: Profile, frames: int, seed: int) -> Iterator[_Event]:
    """Every message of a recording in time order (ties: image, TF, LiDAR), lazily."""
    image_rng, lidar_rng = (np.random.default_rng(s)
                            for s in np.random.SeedSequence([seed, 2]).spawn(2))
    return heapq.merge(_image_events(spec, frames, image_rng), _tf_events(spec, frames),
                       _lidar_events(spec, frames, lidar_rng), key=lambda e: (e.ts, e.order))


# --- streamed truth files ------------------------------------------------------------------------


@contextmanager
def _atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A binary file written beside ``path`` and renamed onto it only if the block succeeds."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class JsonFramesWriter:
    """Writes ``json.dumps({**header, "frames": [...]}, sort_keys=True, indent=2)`` frame by
    frame, to the same bytes, without holding the frames."""

    _MARK = "\u0000frames\u0000"

    def __init__(self, fh: IO[bytes], header: dict[str, Any]) -> None:
        """Write everything before the frames list to ``fh``."""
        text = json.dumps({**header, "frames": self._MARK}, sort_keys=True, indent=2) + "\n"
        self._prefix, self._suffix = text.split(json.dumps(self._MARK))
        self._fh = fh
        self._count = 0
        fh.write(self._prefix.encode())

    def add(self, frame: dict[str, Any]) -> None:
        """Append one frame (already rounded)."""
        body = textwrap.indent(json.dumps(frame, sort_keys=True, indent=2), "    ")
        self._fh.write((("[\n" if self._count == 0 else ",\n") + body).encode())
        self._count += 1

    def close(self) -> None:
        """Close the list and write the rest of the header."""
        self._fh.write(("\n  ]" if self._count else "[]").encode() + self._suffix.encode())


class IdMapsWriter:
    """An ``.npz`` with ``id_maps`` (n × H × W uint8) written map by map, and ``frame_index``.

    Zip entries carry a fixed date, so the same maps give the same bytes.
    """

    def __init__(self, fh: IO[bytes], frame_indices: list[int], height: int, width: int) -> None:
        """Open the ``id_maps`` entry for ``len(frame_indices)`` maps of ``height`` × ``width``."""
        self._zf = zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED)
        self._frame_indices = np.array(frame_indices, dtype=np.int64)
        self._shape = (height, width)
        self._written = 0
        self._entry = self._zf.open(npz_entry("id_maps"), "w", force_zip64=True)
        np.lib.format.write_array_header_1_0(self._entry, {
            "descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False,
            "shape": (len(frame_indices), height, width)})

    def add(self, ids: np.ndarray) -> None:
        """Append the next map (uint8, H × W)."""
        if ids.shape != self._shape or ids.dtype != np.uint8:
            raise ValueError(f"id map {ids.shape} {ids.dtype}, expected {self._shape} uint8")
        self._entry.write(np.ascontiguousarray(ids).tobytes())
        self._written += 1

    def close(self) -> None:
        """Finish ``id_maps`` (all maps must be written), add ``frame_index``, close the zip."""
        if self._written != len(self._frame_indices):
            raise RuntimeError(f"{self._written} id maps written, "
                               f"{len(self._frame_indices)} announced")
        self._entry.close()
        with self._zf.open(npz_entry("frame_index"), "w", force_zip64=True) as fh:
            np.lib.format.write_array(fh, self._frame_indices, allow_pickle=False)
        self._zf.close()


# --- the synthesizer -----------------------------------------------------------------------------


def _scene_header(scene: Scene, spec: Profile, seed: int, scene_seed: int, frames: int,
                  truth_every: int) -> dict[str, Any]:
    cam = scene.camera
    tour = scene.path
    assert isinstance(tour, TourPath)
    path = tour.loop
    # The room's interior: between the inner faces of the walls, floor and ceiling.
    slab = {s.name: s for s in scene.room}
    lo = (slab["wall_back"].hi[0], slab["wall_right"].hi[1], slab["floor"].hi[2])
    hi = (slab["wall_front"].lo[0], slab["wall_left"].lo[1], slab["ceiling"].lo[2])
    return {
        "generator": GENERATOR,
        "profile": spec.name,
        "seed": seed,
        "scene_seed": scene_seed,
        "frame_count": frames,
        "truth_every": truth_every,
        "rates_hz": {IMAGE_STREAM: spec.image_rate_hz, LIDAR_STREAM: spec.lidar_rate_hz,
                     "tf_world_base_link": spec.tf_rate_hz, "tf_static": spec.static_tf_rate_hz},
        "camera": camera_record(cam),
        "lidar": {"frame_id": LIDAR_FRAME,
                  "pattern": "mid360" if spec.lidar_points else "rings",
                  "points_per_scan": spec.lidar_points or len(
                      lidar_directions(scene.lidar_elevations_deg,
                                       scene.lidar_azimuth_step_deg))},
        "room": {"lo": list(lo), "hi": list(hi),
                 "surfaces": [{"name": s.name, "rgb": list(s.rgb)} for s in scene.room]},
        "path": {"kind": "figure_eight" if path.lobes == 2 else "ellipse",
                 "center_xy": list(path.center_xy), "radii_xy": list(path.radii_xy),
                 "speed_mps": path.speed, "lap_length_m": path.lap_length,
                 "direction": path.direction, "phase0": path.phase0,
                 "tour": {"waypoints_xy": tour.waypoints.tolist(),
                          "turn_rate_deg_s": math.degrees(tour.turn_rate),
                          "look_deg": math.degrees(tour.look), "stop_at": tour.stop_at,
                          "stop_s": tour.stop_s, "lap_duration_s": tour.lap_duration_s,
                          "lap_length_m": tour.lap_length}},
        "objects": [
            {"id": o.id, "name": o.name, "shape": o.shape, "color": o.color, "rgb": list(o.rgb),
             "center_world": list(o.center), "size": list(o.size), "yaw": o.yaw}
            for o in scene.objects
        ],
        "distractors": [
            {"kind": d.kind, "shape": d.shape, "rgb": list(d.rgb), "center_world": list(d.center),
             "size": list(d.size), "yaw": d.yaw, "texture": d.texture, "rgb2": list(d.rgb2),
             "period_m": d.period_m}
            for d in scene.distractors
        ],
    }


def synthesize_streamed(out_db: str | Path, spec: Profile, *, seed: int, scene_seed: int,
                        frames: int, truth_every: int) -> SynthOutputs:
    """Render ``seeded_scene(scene_seed)`` through ``spec`` into ``out_db`` and its truth files.

    Rendering and writing are interleaved message by message; existing files at the output
    paths are replaced atomically (a stale ``.truth.npz`` is removed when ``truth_every = 0``).
    Same arguments on the same machine, same bytes.
    """
    out_db = Path(out_db)
    if out_db.suffix != ".db":
        raise SynthConfigError(f"{out_db}: a recording file name must end in .db, e.g. rig.db")
    if truth_every < 0:
        raise SynthConfigError(f"--truth-every must be ≥ 0 (0: no per-frame truth), "
                               f"got {truth_every}")
    if scene_seed < 0:
        raise SynthConfigError(f"--scene-seed must be ≥ 0, got {scene_seed}")
    out_db.parent.mkdir(parents=True, exist_ok=True)
    scene_json, truth_npz = sidecar_paths(out_db)
    scene = seeded_scene(scene_seed, spec.camera(), t0=T0)
    cam = scene.camera
    truth_frames = list(range(0, frames, truth_every)) if truth_every else []
    noise_rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    rings = lidar_directions(scene.lidar_elevations_deg, scene.lidar_azimuth_step_deg)

    started = time.perf_counter()
    raycaster = SceneRaycaster(scene)
    fisheye = fisheye_directions(cam)
    pinhole = pinhole_directions(cam.K_rect, cam.width, cam.height) if truth_frames else None
    header = rounded(_scene_header(scene, spec, seed, scene_seed, frames, truth_every))
    scans = 0
    with RecordingWriter(out_db, overwrite=True) as writer, \
            _atomic_file(scene_json) as json_fh, \
            (_atomic_file(truth_npz) if truth_frames else _no_file()) as npz_fh, \
            progress.task(f"synthesizing {out_db.name}", total=frames) as advance:
        add_sensor_streams(writer)
        truth_json = JsonFramesWriter(json_fh, header)
        id_maps = (IdMapsWriter(npz_fh, truth_frames, cam.height, cam.width)
                   if npz_fh is not None else None)
        for event in timeline(spec, frames, seed):
            t = event.ts
            if event.kind == "tf":
                writer.write(TF_STREAM, t, world_tf(t, scene.path.world_from_base(t), event.index))
            elif event.kind == "tf_static":
                for mount in static_tfs(t, scene.base_from_camera, scene.base_from_lidar,
                                        event.index):
                    writer.write(TF_STREAM, t, mount)
            elif event.kind == "lidar":
                directions = (mid360_directions(event.index, spec.lidar_points)
                              if spec.lidar_points else rings)
                points = raycaster.scan(world_from_lidar(scene, t), directions, noise_rng)
                writer.write(LIDAR_STREAM, t, point_cloud(points, t, event.index),
                             pose=pose7(scene.path.world_from_base(t)))
                scans += 1
            else:
                i = event.index
                w_cam = world_from_camera(scene, t)
                view = raycaster.render(w_cam, fisheye)
                assert view.rgb is not None
                writer.write(CAMERA_INFO_STREAM, t, scene_camera_info(scene, t, i))
                writer.write(IMAGE_STREAM, t, camera_image(view.rgb, t, i),
                             pose=pose7(scene.path.world_from_base(t)))
                if truth_every and i % truth_every == 0:
                    assert pinhole is not None
                    cam_from_world = np.linalg.inv(w_cam)
                    rectified = raycaster.render(w_cam, pinhole, colour=False)
                    truth_json.add(rounded({
                        "index": i,
                        "image_ts": t,
                        "camera_from_world": cam_from_world.tolist(),
                        "objects": frame_objects(scene, cam_from_world, rectified),
                    }))
                    if id_maps is not None:
                        id_maps.add(rectified.ids)
                advance(1)
        truth_json.close()
        if id_maps is not None:
            id_maps.close()
    render_seconds = time.perf_counter() - started
    if not truth_frames:
        truth_npz.unlink(missing_ok=True)  # it would describe some other recording
    return SynthOutputs(out_db, scene_json, truth_npz if truth_frames else None, frames, scans,
                        render_seconds)


@contextmanager
def _no_file() -> Iterator[None]:
    yield None
