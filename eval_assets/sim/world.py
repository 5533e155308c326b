"""The simulated world: a PyBullet session with a floor, settled objects and the husky.

:class:`SimWorld` places the catalog's objects beside the drive (rejection sampling, then
physics until they rest), loads the husky, renders the camera (``ER_TINY_RENDERER``, with the
segmentation buffer) and casts the LiDAR's rays in a second session built from the objects'
VISUAL meshes. The husky is placed kinematically; nothing is stepped after settling.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval_assets.sim.catalog import DISTRACTORS, CatalogEntry, SimConfigError, entries_for
from eval_assets.sim.geometry import PinholeCamera, VisualBox, view_matrix, visual_box
from eval_assets.sim.path import DrivePath

BACKGROUND_ID = 255
MAX_RAYS_PER_CALL = 8192  # rayTestBatch returns at most 16,383 results per call: stay well under
LIDAR_RANGE_M = 25.0
_HUSKY_RADIUS_M = 0.61  # half-diagonal of its 1.01 × 0.69 m footprint
_CLEARANCE_M = 0.15  # between the husky's footprint and an object's, along the whole path
_GAP_M = 0.25  # between two objects' footprints
_PLACE_TRIES = 400
_SETTLE_STEPS, _SETTLE_MAX_STEPS = 480, 4800  # 2 s, at most 20 s at 240 Hz
_SETTLE_CHECK_STEPS = 60  # a quarter second
_SETTLED_MOVE_M = 1e-3


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
class PlacedObject:
    """One benchmark object after settling."""

    id: int
    entry: CatalogEntry
    body: int
    base_position: tuple[float, float, float]
    base_orientation: tuple[float, float, float, float]
    box: VisualBox


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
        ends = origin + dirs_w * LIDAR_RANGE_M
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
        ranges = frac[keep] * LIDAR_RANGE_M
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
