"""Object extents from the VISUAL meshes, and the camera model of PyBullet's renderer.

Two facts cost time before (see ``specs/simulator.md``): ``p.getAABB`` is the collision shape
(padded, world-axis-aligned, the table's only 5 cm high), so sizes are read from the visual
meshes; and ``getVisualShapeData`` frames are relative to the URDF link frame, while
``getBasePositionAndOrientation`` reports the centre-of-mass frame:
link = ``T_com · inv(T_inertial)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

GEOM_MESH = 5  # p.GEOM_MESH; the catalog's models are all meshes


@dataclass(frozen=True)
class VisualBox:
    """An object's visual-mesh box: extents in its own (centre-of-mass) frame and centres."""

    size: tuple[float, float, float]
    center_local: tuple[float, float, float]  # box centre in the object's own frame
    center_world: tuple[float, float, float]
    # The highest mesh vertex's world height: the top of a tilted object exactly, where the
    # turned box's highest corner only bounds it.
    top_world: float


def quaternion_matrix(q: tuple[float, ...] | list[float]) -> np.ndarray:
    """3×3 rotation of a unit quaternion ``(x, y, z, w)`` (PyBullet's order)."""
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def pose_matrix(position: tuple[float, ...] | list[float],
                orientation: tuple[float, ...] | list[float]) -> np.ndarray:
    """4×4 transform from a position and an ``(x, y, z, w)`` quaternion."""
    m = np.eye(4)
    m[:3, :3] = quaternion_matrix(orientation)
    m[:3, 3] = [float(v) for v in position]
    return m


@lru_cache(maxsize=64)
def obj_vertices(path: str) -> np.ndarray:
    """(N, 3) vertices of a Wavefront OBJ file (every ``v`` line; read once per process)."""
    rows = []
    with Path(path).open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("v "):
                rows.append([float(v) for v in line.split()[1:4]])
    if not rows:
        raise ValueError(f"{path}: no vertices ('v x y z' lines); not a usable OBJ mesh")
    out = np.array(rows, dtype=np.float64)
    out.setflags(write=False)
    return out


def visual_box(client: int, body: int) -> VisualBox:
    """The box around ``body``'s visual meshes, in its centre-of-mass frame and in the world.

    Only single-link bodies with mesh visuals (the catalog's) are supported.
    """
    import pybullet as p

    com_pos, com_orn = p.getBasePositionAndOrientation(body, physicsClientId=client)
    t_com = pose_matrix(com_pos, com_orn)
    inertial_pos, inertial_orn = p.getDynamicsInfo(body, -1, physicsClientId=client)[3:5]
    t_link = t_com @ np.linalg.inv(pose_matrix(inertial_pos, inertial_orn))
    com_from_world = np.linalg.inv(t_com)
    points = []
    for shape in p.getVisualShapeData(body, physicsClientId=client):
        link, geom, scale, mesh, local_pos, local_orn = shape[1:7]
        if link != -1 or geom != GEOM_MESH:
            raise ValueError(f"body {body}: visual shape of link {link}, geometry {geom}; only "
                             "single-link bodies with mesh visuals are supported")
        verts = obj_vertices(mesh.decode()) * np.asarray(scale, dtype=np.float64)
        t = com_from_world @ t_link @ pose_matrix(local_pos, local_orn)
        points.append(verts @ t[:3, :3].T + t[:3, 3])
    allp = np.concatenate(points)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    center_local = (lo + hi) / 2
    center_world = t_com[:3, :3] @ center_local + t_com[:3, 3]
    top_world = float((allp @ t_com[:3, :3].T + t_com[:3, 3])[:, 2].max())
    return VisualBox(size=(float(hi[0] - lo[0]), float(hi[1] - lo[1]), float(hi[2] - lo[2])),
                     top_world=top_world,
                     center_local=(float(center_local[0]), float(center_local[1]),
                                   float(center_local[2])),
                     center_world=(float(center_world[0]), float(center_world[1]),
                                   float(center_world[2])))


def world_aabb(client: int, body: int) -> tuple[tuple[float, float, float],
                                                tuple[float, float, float]]:
    """``(size, center_world)`` of the world-axis box round every link of ``body`` (PyBullet's
    own AABBs): the truth place of a multi-link distractor, which :func:`visual_box` does not
    take. Axis-aligned, so a turned object's footprint is a little larger than its own."""
    import pybullet as p

    links = range(-1, p.getNumJoints(body, physicsClientId=client))
    boxes = np.array([p.getAABB(body, link, physicsClientId=client) for link in links])
    lo, hi = boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)
    size, center = hi - lo, (lo + hi) / 2
    return ((float(size[0]), float(size[1]), float(size[2])),
            (float(center[0]), float(center[1]), float(center[2])))


@dataclass(frozen=True)
class PinholeCamera:
    """PyBullet's ``computeProjectionMatrixFOV`` camera as an OpenCV pinhole.

    ``fx = fy = (H/2) / tan(fov_y/2)``, ``cx = W/2 − 0.5``, ``cy = H/2 − 0.5`` (pixel centres at
    integer coordinates); ``near``/``far`` turn the depth buffer into metres.
    """

    width: int
    height: int
    fov_y_deg: float
    near: float
    far: float

    @property
    def K(self) -> np.ndarray:
        """3×3 intrinsics."""
        f = (self.height / 2) / math.tan(math.radians(self.fov_y_deg) / 2)
        return np.array([[f, 0.0, self.width / 2 - 0.5], [0.0, f, self.height / 2 - 0.5],
                         [0.0, 0.0, 1.0]])

    def depth_m(self, zbuffer: np.ndarray) -> np.ndarray:
        """Metric depth (camera z) of OpenGL depth-buffer values."""
        z = np.asarray(zbuffer, dtype=np.float64)
        return self.far * self.near / (self.far - (self.far - self.near) * z)

    def ray_lengths(self) -> np.ndarray:
        """(H, W) factor turning depth (camera z) into Euclidean distance from the camera."""
        k = self.K
        us, vs = np.meshgrid(np.arange(self.width), np.arange(self.height))
        return np.sqrt(1.0 + ((us - k[0, 2]) / k[0, 0]) ** 2 + ((vs - k[1, 2]) / k[1, 1]) ** 2)


# OpenCV camera axes (x right, y down, z forward) ↔ OpenGL's (x right, y up, z backward).
CV_FROM_GL = np.diag([1.0, -1.0, -1.0, 1.0])


def view_matrix(world_from_camera: np.ndarray) -> list[float]:
    """PyBullet's column-major view matrix for an OpenCV camera pose in the world."""
    gl_from_world = np.linalg.inv(world_from_camera @ CV_FROM_GL)
    return [float(v) for v in gl_from_world.T.reshape(-1)]


def world_from_view(view: list[float] | tuple[float, ...]) -> np.ndarray:
    """The OpenCV camera pose a PyBullet view matrix describes (inverse of :func:`view_matrix`)."""
    return np.linalg.inv(np.asarray(view, dtype=np.float64).reshape(4, 4).T) @ CV_FROM_GL
