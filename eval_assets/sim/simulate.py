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

The husky is placed kinematically (``resetBasePositionAndOrientation`` at each message time),
not driven by wheel velocities: the objects are settled by physics first and then never touched,
so one ``center_world`` per object is the truth of every frame, and the path (turns, the stop,
the revisit) is exactly the designed one rather than whatever wheel slip makes of it. Same seed,
same options: the same scene, poses and truth (PyBullet in DIRECT mode is deterministic).
Nothing is left at the output paths unless all three files were written.
"""

from __future__ import annotations

import ctypes
import io
import json
import math
import os
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.recording import RecordingWriter, jpeg_image
from eval_assets.recording.messages import (
    FLOAT32,
    CameraInfo,
    Header,
    Image,
    PointCloud2,
    PointField,
    TFMessage,
    Transform,
    TransformStamped,
)
from eval_assets.sim.catalog import DISTRACTORS, CatalogEntry, SimConfigError, entries_for
from eval_assets.sim.geometry import PinholeCamera, VisualBox, pose_matrix, view_matrix, visual_box
from eval_assets.sim.path import PATHS, DrivePath, drive_path

GENERATOR = "eval_assets.sim.simulate/1"
T0 = 1_700_000_000.0
WORLD_FRAME, BASE_FRAME, CAMERA_FRAME, LIDAR_FRAME = (
    "world", "base_link", "camera_optical", "mid360_link")
LIDAR_STREAM = "pointlio_lidar"
RESOLUTIONS = {"640x480": (640, 480), "1280x720": (1280, 720)}
BACKGROUND_ID = 255
MAX_OBJECTS = 64
MAX_RAYS_PER_CALL = 8192  # rayTestBatch returns at most 16,383 results per call: stay well under

_FIRST_IMAGE_S = 0.25
_LIDAR_OFFSET_S = 0.013
_TF_PERIOD_S = 0.1
_STATIC_TF_PERIOD_S = 0.2
_JPEG_QUALITY = 90
_DECIMALS = 6
_FOV_Y_DEG = 60.0
_NEAR, _FAR = 0.1, 30.0
_LIDAR_RANGE_M = 25.0
_HUSKY_RADIUS_M = 0.61  # half-diagonal of its 1.01 × 0.69 m footprint
_CLEARANCE_M = 0.15  # between the husky's footprint and an object's, along the whole path
_GAP_M = 0.25  # between two objects' footprints
_PLACE_TRIES = 400
_SETTLE_STEPS, _SETTLE_MAX_STEPS = 480, 4800  # 2 s, at most 20 s at 240 Hz
_SETTLE_CHECK_STEPS = 60  # a quarter second
_SETTLED_MOVE_M = 1e-3

# The optical frame in base axes (optical z = base x, x = −base y, y = −base z), pitched down.
_CAMERA_PITCH_RAD = math.radians(10.0)
_OPTICAL_LEVEL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def _rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _homogeneous(r: np.ndarray, t: tuple[float, float, float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = r
    m[:3, 3] = t
    return m


# A camera on a mast at the husky's front (its top plate is 0.40 m high), a LiDAR above it.
BASE_FROM_CAMERA = _homogeneous(_rot_y(_CAMERA_PITCH_RAD) @ _OPTICAL_LEVEL, (0.30, 0.0, 0.65))
BASE_FROM_LIDAR = _homogeneous(np.eye(3), (0.0, 0.0, 0.75))


@dataclass(frozen=True)
class SimConfig:
    """Everything that decides a simulated recording (with ``seed``, all of it)."""

    seed: int = 0
    frames: int = 120
    resolution: str = "640x480"
    objects: int = 8
    names: tuple[str, ...] = ()
    path: str = "loop"
    distractors: int = 1
    lidar_rings: int = 16
    lidar_columns: int = 1024
    lidar_fov_deg: tuple[float, float] = (-15.0, 15.0)


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


@dataclass(frozen=True)
class PlacedObject:
    """One benchmark object after settling."""

    id: int
    entry: CatalogEntry
    body: int
    base_position: tuple[float, float, float]
    base_orientation: tuple[float, float, float, float]
    box: VisualBox


def sidecar_paths(db: Path) -> tuple[Path, Path]:
    """``X.db`` → ``X.scene.json``, ``X.truth.npz`` (the synthesizer's names)."""
    return db.with_suffix(".scene.json"), db.with_suffix(".truth.npz")


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


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence file descriptors 1 and 2 for the block: PyBullet's C++ prints its build time at
    import and a warning per URDF link without inertia (the husky has six) straight to them,
    which would bury the command's own output."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
        import pybullet  # noqa: F401  (its build-time banner goes to the null device too)
        yield
    finally:
        # C's stdio buffers those prints: flush them into the null device before restoring.
        ctypes.CDLL(None).fflush(None)
        for fd, copy in enumerate(saved, start=1):
            os.dup2(copy, fd)
            os.close(copy)


# --- the world -------------------------------------------------------------------------------


class SimWorld:
    """A PyBullet DIRECT session: floor, settled objects, distractors and the husky."""

    def __init__(self, config: SimConfig, path: DrivePath) -> None:
        """Connect, load the floor, place and settle the objects, then load the husky."""
        with quiet_stdout():
            self._build(config, path)
        self.id_of_body = {o.body: o.id for o in self.objects}

    def _build(self, config: SimConfig, path: DrivePath) -> None:
        import pybullet as p
        import pybullet_data

        self.p = p
        self.config = config
        self.path = path
        self.client = p.connect(p.DIRECT)
        self.data_dir = Path(pybullet_data.getDataPath())
        try:
            p.setAdditionalSearchPath(str(self.data_dir), physicsClientId=self.client)
            p.setGravity(0, 0, -9.81, physicsClientId=self.client)
            self.floor = p.loadURDF("plane.urdf", physicsClientId=self.client)
            self.objects, self.distractor_bodies = self._place(np.random.default_rng(
                np.random.SeedSequence([config.seed, 7])))
            self.husky = p.loadURDF("husky/husky.urdf", [0.0, 0.0, 0.0],
                                    physicsClientId=self.client)
            self._build_lidar_world()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Disconnect both sessions (idempotent)."""
        for name in ("client", "lidar_client"):
            client = getattr(self, name, -1)
            if client >= 0:
                self.p.disconnect(physicsClientId=client)
                setattr(self, name, -1)

    def _build_lidar_world(self) -> None:
        """A second session the LiDAR's rays are cast in: every object as its VISUAL meshes
        (static concave triangle meshes at their settled poses), the floor and the husky.

        Rays test collision shapes, and those are not what the camera sees: the table's is its
        top only (rays went between its legs to the floor behind, 1 m too far), the teddy's a
        convex decomposition. Casting against the visual meshes keeps the two sensors of one
        world consistent (LiDAR points inside an object's mask lie on that object).
        """
        p, c = self.p, self.client
        self.lidar_client = lc = p.connect(p.DIRECT)
        p.setAdditionalSearchPath(str(self.data_dir), physicsClientId=lc)
        self.lidar_floor = p.loadURDF("plane.urdf", physicsClientId=lc)
        for obj in self.objects:
            com_pos, com_orn = p.getBasePositionAndOrientation(obj.body, physicsClientId=c)
            inertial_pos, inertial_orn = p.getDynamicsInfo(obj.body, -1, physicsClientId=c)[3:5]
            link_pos, link_orn = p.multiplyTransforms(
                com_pos, com_orn, *p.invertTransform(inertial_pos, inertial_orn))
            for shape in p.getVisualShapeData(obj.body, physicsClientId=c):
                scale, mesh, local_pos, local_orn = shape[3:7]
                pos, orn = p.multiplyTransforms(link_pos, link_orn, local_pos, local_orn)
                collision = p.createCollisionShape(
                    p.GEOM_MESH, fileName=mesh.decode(), meshScale=scale,
                    flags=p.GEOM_FORCE_CONCAVE_TRIMESH, physicsClientId=lc)
                p.createMultiBody(0, collision, basePosition=pos, baseOrientation=orn,
                                  physicsClientId=lc)
        for i, body in enumerate(self.distractor_bodies):
            pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=c)
            entry = DISTRACTORS[i % len(DISTRACTORS)]
            p.loadURDF(entry.urdf, pos, orn, globalScaling=entry.global_scaling,
                       useFixedBase=True, physicsClientId=lc)
        self.lidar_husky = p.loadURDF("husky/husky.urdf", [0.0, 0.0, 0.0], physicsClientId=lc)

    def _load(self, entry: CatalogEntry, xy: tuple[float, float], yaw: float) -> int:
        p = self.p
        orn = p.getQuaternionFromEuler([0.0, 0.0, yaw])
        body = int(p.loadURDF(entry.urdf, [xy[0], xy[1], 0.0], orn,
                              globalScaling=entry.global_scaling, useFixedBase=entry.fixed,
                              physicsClientId=self.client))
        if not entry.fixed:
            # Lift it so its lowest point (collision or visual) is 5 mm above the floor.
            lo = p.getAABB(body, -1, physicsClientId=self.client)[0][2]
            pos, _ = p.getBasePositionAndOrientation(body, physicsClientId=self.client)
            p.resetBasePositionAndOrientation(body, [pos[0], pos[1], pos[2] - lo + 0.005], orn,
                                              physicsClientId=self.client)
            # Balls and ducks would roll on for seconds; a little rolling friction settles them.
            p.changeDynamics(body, -1, rollingFriction=0.002, spinningFriction=0.002,
                             physicsClientId=self.client)
        return body

    def _radius(self, body: int) -> float:
        lo, hi = self.p.getAABB(body, -1, physicsClientId=self.client)
        return 0.5 * math.hypot(hi[0] - lo[0], hi[1] - lo[1])

    def _place(self, rng: np.random.Generator) -> tuple[list[PlacedObject], list[int]]:
        """Rejection-sample footprints beside the path, then let physics settle them."""
        p, c = self.p, self.client
        entries = entries_for(list(self.config.names), self.config.objects)
        extra = [DISTRACTORS[i % len(DISTRACTORS)] for i in range(self.config.distractors)]
        track = self.path.samples()
        placed: list[tuple[int, float]] = []  # (body, footprint radius)
        for entry in [*entries, *extra]:
            body = self._load(entry, (0.0, 0.0), float(rng.uniform(-math.pi, math.pi)))
            radius = self._radius(body)
            for _ in range(_PLACE_TRIES):
                anchor = track[int(rng.integers(len(track)))]
                angle = float(rng.uniform(-math.pi, math.pi))
                dist = _HUSKY_RADIUS_M + radius + _CLEARANCE_M + float(rng.uniform(0.1, 1.8))
                xy = anchor + dist * np.array([math.cos(angle), math.sin(angle)])
                if self._free(xy, radius, track, placed):
                    break
            else:
                raise SimConfigError(
                    f"seed {self.config.seed} cannot place {entry.name!r} (object "
                    f"{len(placed) + 1} of {len(entries) + len(extra)}) beside the "
                    f"{self.config.path!r} path in {_PLACE_TRIES} tries: the path and the "
                    "objects already placed leave no room. Fix: pass fewer --objects or "
                    "--distractors, or another --seed")
            pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=c)
            p.resetBasePositionAndOrientation(body, [float(xy[0]), float(xy[1]), pos[2]], orn,
                                              physicsClientId=c)
            placed.append((body, radius))
        self._settle([b for b, _ in placed[:len(entries)]])  # the distractors may wobble
        objects = []
        for i, ((body, radius), entry) in enumerate(zip(placed, entries, strict=False)):
            pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=c)
            if not self._free(np.array(pos[:2]), radius, track, []):
                raise SimConfigError(
                    f"seed {self.config.seed}: {entry.name!r} rolled onto the husky's path while "
                    "settling. Fix: pass another --seed or fewer --objects")
            objects.append(PlacedObject(
                id=i, entry=entry, body=body,
                base_position=(float(pos[0]), float(pos[1]), float(pos[2])),
                base_orientation=(float(orn[0]), float(orn[1]), float(orn[2]), float(orn[3])),
                box=visual_box(c, body)))
        return objects, [b for b, _ in placed[len(entries):]]

    def _free(self, xy: np.ndarray, radius: float, track: np.ndarray,
              placed: list[tuple[int, float]]) -> bool:
        """Whether a footprint of ``radius`` at ``xy`` clears the path and ``placed``."""
        if np.min(np.hypot(*(track - xy).T)) < _HUSKY_RADIUS_M + radius + _CLEARANCE_M:
            return False
        for body, r in placed:
            pos, _ = self.p.getBasePositionAndOrientation(body, physicsClientId=self.client)
            if math.hypot(xy[0] - pos[0], xy[1] - pos[1]) < radius + r + _GAP_M:
                return False
        return True

    def _settle(self, bodies: list[int]) -> None:
        """Step physics until no object moved more than 1 mm in the last quarter second.

        Displacement rather than velocity: a resting jenga block keeps reporting ~2 mm/s of
        contact jitter without going anywhere. After this the objects are never stepped again.
        """
        p, c = self.p, self.client

        def where() -> np.ndarray:
            return np.array([p.getBasePositionAndOrientation(b, physicsClientId=c)[0]
                             for b in bodies])

        for _ in range(_SETTLE_STEPS):
            p.stepSimulation(physicsClientId=c)
        before = where()
        for _ in range((_SETTLE_MAX_STEPS - _SETTLE_STEPS) // _SETTLE_CHECK_STEPS):
            for _ in range(_SETTLE_CHECK_STEPS):
                p.stepSimulation(physicsClientId=c)
            now = where()
            moved = np.linalg.norm(now - before, axis=1)
            if moved.max() < _SETTLED_MOVE_M:
                return
            before = now
        raise SimConfigError(f"seed {self.config.seed}: {int((moved >= _SETTLED_MOVE_M).sum())} "
                             f"object(s) still moving after {_SETTLE_MAX_STEPS / 240:.0f} s of "
                             "settling. Fix: pass another --seed")

    def place_husky(self, t: float) -> np.ndarray:
        """Put the husky at its pose at epoch time ``t``; returns ``world → base_link``."""
        m = self.path.world_from_base(t)
        x, y, yaw = self.path.pose2d(t)
        orn = self.p.getQuaternionFromEuler([0.0, 0.0, yaw])
        for client, husky in ((self.client, self.husky), (self.lidar_client, self.lidar_husky)):
            self.p.resetBasePositionAndOrientation(husky, [x, y, 0.0], orn,
                                                   physicsClientId=client)
        # Ray tests use the broadphase's boxes: refresh them after the teleport.
        self.p.performCollisionDetection(physicsClientId=self.lidar_client)
        return m

    def render(self, camera: PinholeCamera, world_from_camera: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """RGB (H, W, 3) uint8, object ids (H, W) uint8 and depth (H, W) metres."""
        p = self.p
        proj = p.computeProjectionMatrixFOV(camera.fov_y_deg, camera.width / camera.height,
                                            camera.near, camera.far)
        _, _, rgba, zbuf, seg = p.getCameraImage(
            camera.width, camera.height, view_matrix(world_from_camera), proj,
            renderer=p.ER_TINY_RENDERER, flags=p.ER_SEGMENTATION_MASK_OBJECT_AND_LINKINDEX,
            physicsClientId=self.client)
        shape = (camera.height, camera.width)
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(*shape, 4)[:, :, :3].copy()
        seg_arr = np.asarray(seg, dtype=np.int64).reshape(shape)
        body = np.where(seg_arr >= 0, seg_arr & 0xFFFFFF, -1)
        lut = np.full(int(body.max()) + 2, BACKGROUND_ID, dtype=np.uint8)
        for b, i in self.id_of_body.items():
            if b < lut.size - 1:
                lut[b] = i
        ids = lut[body]  # body −1 indexes the last entry: background
        depth = camera.depth_m(np.asarray(zbuf, dtype=np.float64).reshape(shape))
        return rgb, ids, depth

    def lidar_scan(self, world_from_lidar: np.ndarray, directions: np.ndarray) -> np.ndarray:
        """(N, 4) float32 x, y, z, intensity in the LiDAR frame; misses and ego hits dropped."""
        p = self.p
        origin = world_from_lidar[:3, 3]
        dirs_w = directions @ world_from_lidar[:3, :3].T
        starts = np.broadcast_to(origin, dirs_w.shape)
        ends = origin + dirs_w * _LIDAR_RANGE_M
        hit_ids: list[int] = []
        fractions: list[float] = []
        for k in range(0, len(dirs_w), MAX_RAYS_PER_CALL):
            results = p.rayTestBatch(starts[k:k + MAX_RAYS_PER_CALL].tolist(),
                                     ends[k:k + MAX_RAYS_PER_CALL].tolist(),
                                     physicsClientId=self.lidar_client)
            hit_ids.extend(r[0] for r in results)
            fractions.extend(r[2] for r in results)
        body = np.asarray(hit_ids)
        frac = np.asarray(fractions)
        keep = (body >= 0) & (body != self.lidar_husky)
        ranges = frac[keep] * _LIDAR_RANGE_M
        local = directions[keep] * ranges[:, None]
        # Intensity: a fixed reflectivity per hit kind (floor dim, objects bright), like a
        # real scanner's returns differ by surface.
        intensity = np.where(body[keep] == self.lidar_floor, 20.0, 120.0)
        return np.column_stack([local, intensity]).astype(np.float32)


def lidar_directions(rings: int, columns: int, fov_deg: tuple[float, float]) -> np.ndarray:
    """(rings × columns, 3) unit rays: evenly spaced elevations × a full turn of azimuths."""
    elev = np.radians(np.linspace(fov_deg[0], fov_deg[1], rings)) if rings > 1 else np.zeros(1)
    az = np.radians(np.arange(columns) * 360.0 / columns)
    e, a = np.meshgrid(elev, az, indexing="ij")
    return np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], -1).reshape(-1, 3)


# --- messages ----------------------------------------------------------------------------------


def _quat_xyzw(r: np.ndarray) -> tuple[float, float, float, float]:
    from eval_assets.synth.scene import quaternion_xyzw

    return quaternion_xyzw(r)


def _transform(m: np.ndarray) -> Transform:
    t = m[:3, 3]
    return Transform((float(t[0]), float(t[1]), float(t[2])), _quat_xyzw(m[:3, :3]))


def _pose7(m: np.ndarray) -> tuple[float, ...]:
    tr = _transform(m)
    return (*tr.translation, *tr.rotation)


def _tf(ts: float, parent: str, child: str, m: np.ndarray, seq: int) -> TFMessage:
    return TFMessage((TransformStamped(Header.at(ts, parent, seq), child, _transform(m)),))


def _camera_info(camera: PinholeCamera, ts: float, seq: int) -> CameraInfo:
    k = camera.K
    return CameraInfo(
        header=Header.at(ts, CAMERA_FRAME, seq), height=camera.height, width=camera.width,
        distortion_model="plumb_bob", D=(0.0, 0.0, 0.0, 0.0, 0.0),
        K=tuple(float(v) for v in k.ravel()), R=(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
        P=tuple(float(v) for v in np.hstack([k, np.zeros((3, 1))]).ravel()))


def _point_cloud(points: np.ndarray, ts: float, seq: int) -> PointCloud2:
    fields = tuple(PointField(name, 4 * i, FLOAT32, 1)
                   for i, name in enumerate(("x", "y", "z", "intensity")))
    return PointCloud2(header=Header.at(ts, LIDAR_FRAME, seq), height=1, width=len(points),
                       fields=fields, is_bigendian=False, point_step=16,
                       row_step=16 * len(points),
                       data=np.ascontiguousarray(points, dtype="<f4").tobytes(), is_dense=True)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, _DECIMALS) + 0.0  # + 0.0 folds −0.0 into 0.0
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if isinstance(value, np.ndarray):
        return _rounded(value.tolist())
    return value


def _third(u: float, width: int) -> str:
    if u < width / 3:
        return "left"
    return "center" if u < 2 * width / 3 else "right"


def frame_objects(objects: list[PlacedObject], camera: PinholeCamera,
                  camera_from_world: np.ndarray, ids: np.ndarray,
                  distance: np.ndarray) -> list[dict[str, Any]]:
    """Per-object truth of one view, in the synthesizer's keys; objects without pixels omitted."""
    k = camera.K
    rows = []
    for obj in objects:
        vs, us = np.nonzero(ids == obj.id)
        if us.size == 0:
            continue
        center = camera_from_world @ np.array([*obj.box.center_world, 1.0])
        px = k @ (center[:3] / center[2])
        rows.append({
            "id": obj.id, "name": obj.entry.name, "visible_pixels": int(us.size),
            "bbox_xyxy": [int(us.min()), int(vs.min()), int(us.max()) + 1, int(vs.max()) + 1],
            "centroid_px": [float(us.mean()), float(vs.mean())],
            "center_px": [float(px[0]), float(px[1])],
            "center_distance_m": float(np.linalg.norm(center[:3])),
            "surface_distance_m": float(np.median(distance[vs, us])),
            "horizontal_third": _third(float(px[0]), camera.width),
        })
    return rows


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
        } for o in world.objects],
        "distractors": [{"urdf": DISTRACTORS[i % len(DISTRACTORS)].urdf,
                         "name": DISTRACTORS[i % len(DISTRACTORS)].name}
                        for i in range(len(world.distractor_bodies))],
        "path": {"name": config.path, "t_start": world.path.t_start,
                 "duration_s": world.path.duration,
                 "segments": [vars(s) for s in world.path.segments]},
        "robot": {"urdf": "husky/husky.urdf", "placement": "kinematic",
                  "base_from_camera": BASE_FROM_CAMERA.tolist(),
                  "base_from_lidar": BASE_FROM_LIDAR.tolist()},
        "lidar": {"rings": config.lidar_rings, "columns": config.lidar_columns,
                  "fov_deg": list(config.lidar_fov_deg), "range_m": _LIDAR_RANGE_M},
        "frame_count": frames,
        "truth_every": 1,
    }


# --- writing -----------------------------------------------------------------------------------


def _us(t: float) -> float:
    return round(t, 6)


def image_times(path: DrivePath, frames: int) -> list[float]:
    """Image stamps spread over the whole drive (first at its start, last at its end)."""
    if frames == 1:
        return [_us(path.t_start)]
    step = path.duration / (frames - 1)
    return [_us(path.t_start + i * step) for i in range(frames)]


@contextmanager
def _temporary(path: Path) -> Iterator[Path]:
    """A hidden temporary beside ``path``, removed unless it was renamed onto ``path``."""
    tmp = path.with_name(f".{path.name}.sim-tmp")
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def _npz_member(zf: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zf.open(info, "w", force_zip64=True) as fh:
        np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)


def simulate_recording(out_db: str | Path, config: SimConfig | None = None) -> SimOutputs:
    """Simulate the scene of ``config`` and write ``out_db`` with its ``.scene.json`` and
    ``.truth.npz`` (replacing existing ones, all or nothing). Same config, same truth."""
    config = config or SimConfig()
    out_db = Path(out_db)
    check_config(out_db, config)
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
        writer = stack.enter_context(RecordingWriter(out_db, overwrite=True))
        # The writer renames its file into place on a clean exit; until then (and on any
        # failure) out_db is untouched, and the truth files are temporaries.
        writer.add_stream("color_image", Image, "jpeg")
        writer.add_stream("camera_info", CameraInfo, "lcm")
        writer.add_stream("tf", TFMessage, "lcm")
        writer.add_stream(LIDAR_STREAM, PointCloud2, "lcm")
        events: list[tuple[float, int, str, int]] = []
        for i, t in enumerate(img_ts):
            events.append((t, 0, "image", i))
            events.append((_us(t + _LIDAR_OFFSET_S), 2, "lidar", i))
        end = img_ts[-1] + 0.25
        events += [(_us(T0 + k * _TF_PERIOD_S), 1, "tf", k)
                   for k in range(math.ceil((end - T0) / _TF_PERIOD_S) + 1)]
        events += [(_us(T0 + k * _STATIC_TF_PERIOD_S), 1, "tf_static", k)
                   for k in range(math.ceil((end - T0) / _STATIC_TF_PERIOD_S) + 1)]
        events.sort()
        ray_lengths = camera.ray_lengths()
        id_maps = np.empty((config.frames, height, width), dtype=np.uint8)
        truth_frames: list[dict[str, Any]] = []
        for ts, _, kind, index in events:
            if kind == "tf":
                writer.write("tf", ts, _tf(ts, WORLD_FRAME, BASE_FRAME,
                                           path.world_from_base(ts), index))
            elif kind == "tf_static":
                writer.write("tf", ts, _tf(ts, BASE_FRAME, CAMERA_FRAME, BASE_FROM_CAMERA, index))
                writer.write("tf", ts, _tf(ts, BASE_FRAME, LIDAR_FRAME, BASE_FROM_LIDAR, index))
            elif kind == "image":
                t0 = time.perf_counter()
                w_base = world.place_husky(ts)
                w_cam = w_base @ BASE_FROM_CAMERA
                rgb, ids, depth = world.render(camera, w_cam)
                timings["render"] += time.perf_counter() - t0
                id_maps[index] = ids
                cam_from_world = np.linalg.inv(w_cam)
                truth_frames.append({
                    "index": index, "image_ts": ts, "lidar_ts": _us(ts + _LIDAR_OFFSET_S),
                    "lidar_dt": _LIDAR_OFFSET_S, "camera_from_world": cam_from_world.tolist(),
                    "objects": frame_objects(world.objects, camera, cam_from_world, ids,
                                             depth * ray_lengths)})
                writer.write("camera_info", ts, _camera_info(camera, ts, index))
                writer.write("color_image", ts,
                             jpeg_image(rgb, Header.at(ts, CAMERA_FRAME, index),
                                        quality=_JPEG_QUALITY), pose=_pose7(w_base))
            else:
                t0 = time.perf_counter()
                w_base = world.place_husky(ts)
                scan = world.lidar_scan(w_base @ BASE_FROM_LIDAR, directions)
                timings["lidar"] += time.perf_counter() - t0
                writer.write(LIDAR_STREAM, ts, _point_cloud(scan, ts, index), pose=_pose7(w_base))
                scans += 1
        t0 = time.perf_counter()
        header = _header(config, world, camera, config.frames)
        text = json.dumps(_rounded({**header, "frames": truth_frames}), sort_keys=True, indent=2)
        json_tmp.write_text(text + "\n", encoding="utf-8")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            _npz_member(zf, "id_maps", id_maps)
            _npz_member(zf, "frame_index", np.arange(config.frames, dtype=np.int64))
        npz_tmp.write_bytes(buf.getvalue())
        try:
            os.replace(npz_tmp, truth_npz)
            os.replace(json_tmp, scene_json)
            writer.close()  # commits and renames the recording into place
        except BaseException:
            # No recording without its truth, no truth of a recording that is not there.
            for done in (truth_npz, scene_json, out_db):
                done.unlink(missing_ok=True)
            raise
        timings["write"] = time.perf_counter() - t0
    return SimOutputs(out_db, scene_json, truth_npz, config.frames, scans,
                      time.perf_counter() - started, timings)


__all__ = ["BASE_FROM_CAMERA", "BASE_FROM_LIDAR", "RESOLUTIONS", "SimConfig", "SimConfigError",
           "SimOutputs", "check_config", "image_times", "lidar_directions", "pose_matrix",
           "simulate_recording"]
