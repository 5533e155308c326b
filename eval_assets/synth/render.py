"""Ray-cast renders of the sample scene with ``open3d.t.geometry.RaycastingScene`` on the CPU.

The camera image is rendered *distorted*: every pixel centre of the fisheye image is undistorted
with ``cv2.fisheye.undistortPoints`` into its viewing ray, so a reader that rectifies with the
recorded ``K``/``D``/``P`` gets back the ideal pinhole view that :func:`pinhole_directions`
renders for the ground truth. Pixel centres are at integer coordinates (OpenCV convention).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import open3d as o3d

from eval_assets.synth.scene import SHAPES, CameraModel, Scene, SceneObject, Slab

BACKGROUND_ID = 255
"""Id-map value of every pixel that shows no object (room surfaces, or nothing)."""

_SUN = np.array([0.35, 0.25, 1.0]) / np.linalg.norm([0.35, 0.25, 1.0])
# Ambient + sun + camera "headlight" weights sum to 1, so shading never clips an albedo and the
# objects' hue and saturation survive in the image for an HSV detector.
_AMBIENT, _SUN_WEIGHT, _HEAD_WEIGHT = 0.40, 0.33, 0.27
_LIDAR_RANGE_NOISE_M = 0.01


@dataclass(frozen=True)
class Hits:
    """First hits of a batch of unit rays: distance (inf on a miss), geometry id, unit normal."""

    t: np.ndarray  # (N,) float64 metres
    geometry: np.ndarray  # (N,) int64, −1 on a miss
    normal: np.ndarray  # (N, 3) world frame, facing the ray


@dataclass(frozen=True)
class View:
    """One rendered camera view: colour, per-pixel object id and hit distance from the camera."""

    rgb: np.ndarray | None  # (H, W, 3) uint8; None when rendered without colour
    ids: np.ndarray  # (H, W) uint8, BACKGROUND_ID where no object
    distance: np.ndarray  # (H, W) float64 metres (Euclidean, camera origin to hit)


def _box_mesh(center: np.ndarray, size: np.ndarray) -> o3d.geometry.TriangleMesh:
    mesh = o3d.geometry.TriangleMesh.create_box(*size)
    return mesh.translate(center - size / 2)


def _object_mesh(obj: SceneObject) -> o3d.geometry.TriangleMesh:
    center, size = np.array(obj.center), np.array(obj.size)
    if obj.shape == "box":
        return _box_mesh(center, size)
    if obj.shape == "ball":
        # 48 bands keep the facets' sagitta below 0.1 px at the closest viewing distance.
        return o3d.geometry.TriangleMesh.create_sphere(radius=size[0] / 2, resolution=48) \
            .translate(center)
    if obj.shape == "cylinder":
        mesh = o3d.geometry.TriangleMesh.create_cylinder(radius=size[0] / 2, height=size[2],
                                                         resolution=96, split=1)
        return mesh.translate(center)
    raise ValueError(f"object {obj.id} ({obj.name!r}) has unknown shape {obj.shape!r}; "
                     f"use one of {', '.join(SHAPES)}")


def _slab_mesh(slab: Slab) -> o3d.geometry.TriangleMesh:
    lo, hi = np.array(slab.lo), np.array(slab.hi)
    return _box_mesh((lo + hi) / 2, hi - lo)


class SceneRaycaster:
    """The scene's meshes in one ``RaycastingScene``, with per-geometry albedo and object id."""

    def __init__(self, scene: Scene) -> None:
        """Build the acceleration structure: objects first (geometry id = object id), then room."""
        self._scene = o3d.t.geometry.RaycastingScene()
        meshes = [_object_mesh(o) for o in scene.objects] + [_slab_mesh(s) for s in scene.room]
        for expected, mesh in enumerate(meshes):
            vertices = np.asarray(mesh.vertices, dtype=np.float32)
            triangles = np.asarray(mesh.triangles, dtype=np.uint32)
            gid = self._scene.add_triangles(o3d.core.Tensor(vertices), o3d.core.Tensor(triangles))
            if gid != expected:
                raise RuntimeError(f"open3d assigned geometry id {gid}, expected {expected}")
        n_obj = len(scene.objects)
        if n_obj >= BACKGROUND_ID:
            raise ValueError(f"the scene has {n_obj} objects; id maps are uint8 with "
                             f"{BACKGROUND_ID} as background, so use at most {BACKGROUND_ID}")
        rgbs = [o.rgb for o in scene.objects] + [s.rgb for s in scene.room]
        self.albedo = np.array(rgbs, dtype=np.float64) / 255.0
        self.object_id = np.array(list(range(n_obj)) + [BACKGROUND_ID] * len(scene.room),
                                  dtype=np.uint8)
        self._objects = scene.objects

    def cast(self, origin: np.ndarray, directions: np.ndarray) -> Hits:
        """Cast unit ``directions`` (N, 3) from one ``origin`` (3,), all in the world frame."""
        n = directions.shape[0]
        rays = np.empty((n, 6), dtype=np.float32)
        rays[:, :3] = origin
        rays[:, 3:] = directions
        out = self._scene.cast_rays(o3d.core.Tensor(rays))
        t = out["t_hit"].numpy().astype(np.float64)
        hit = np.isfinite(t)
        geometry = np.where(hit, out["geometry_ids"].numpy().astype(np.int64), -1)
        normal = out["primitive_normals"].numpy().astype(np.float64)
        points = origin + directions * np.where(hit, t, 0.0)[:, None]
        # Smooth analytic normals on curved surfaces: triangle normals would facet the shading.
        for obj in self._objects:
            if obj.shape == "box":
                continue
            sel = geometry == obj.id
            if obj.shape == "cylinder":
                sel &= np.abs(normal[:, 2]) < 0.5  # the caps keep their flat normal
            radial = points[sel] - np.array(obj.center)
            if obj.shape == "cylinder":
                radial[:, 2] = 0.0
            normal[sel] = radial / np.linalg.norm(radial, axis=1, keepdims=True)
        facing = np.sum(normal * directions, axis=1) > 0.0
        normal[facing] *= -1.0
        return Hits(t=t, geometry=geometry, normal=normal)

    def shade(self, hits: Hits, directions: np.ndarray) -> np.ndarray:
        """Lambertian colour (N, 3) uint8: ambient + sun from above + headlight; misses black."""
        hit = hits.geometry >= 0
        sun = np.clip(np.einsum("ij,j->i", hits.normal, _SUN), 0.0, None)
        head = np.clip(-np.sum(hits.normal * directions, axis=1), 0.0, None)
        light = _AMBIENT + _SUN_WEIGHT * sun + _HEAD_WEIGHT * head
        albedo = self.albedo[np.where(hit, hits.geometry, 0)]
        rgb = np.where(hit[:, None], albedo * light[:, None], 0.0)
        return np.clip(np.rint(rgb * 255.0), 0, 255).astype(np.uint8)

    def ids(self, hits: Hits) -> np.ndarray:
        """Object id per ray (uint8), ``BACKGROUND_ID`` for room surfaces and misses."""
        return np.where(hits.geometry >= 0, self.object_id[np.maximum(hits.geometry, 0)],
                        BACKGROUND_ID).astype(np.uint8)

    def render(self, world_from_camera: np.ndarray, directions: np.ndarray,
               colour: bool = True) -> View:
        """Render a view from camera-frame unit ray ``directions`` (H, W, 3) at a 4×4 pose.

        ``colour=False`` skips shading when only the id map and distances are needed.
        """
        h, w, _ = directions.shape
        world_dirs = _rotate(world_from_camera[:3, :3], directions.reshape(-1, 3))
        hits = self.cast(world_from_camera[:3, 3], world_dirs)
        return View(
            rgb=self.shade(hits, world_dirs).reshape(h, w, 3) if colour else None,
            ids=self.ids(hits).reshape(h, w),
            distance=hits.t.reshape(h, w),
        )

    def lidar_scan(self, world_from_lidar: np.ndarray, elevations_deg: np.ndarray,
                   azimuth_step_deg: float, rng: np.random.Generator) -> np.ndarray:
        """One 360° scan as (N, 4) float32 x, y, z, intensity in the LiDAR frame; misses dropped.

        Ranges get Gaussian noise (σ = 1 cm, like a Mid-360); intensity is a 0–255 reflectivity
        from the albedo's luminance and the incidence angle.
        """
        directions = lidar_directions(elevations_deg, azimuth_step_deg)
        world_dirs = _rotate(world_from_lidar[:3, :3], directions)
        hits = self.cast(world_from_lidar[:3, 3], world_dirs)
        hit = np.isfinite(hits.t)
        noise = rng.normal(0.0, _LIDAR_RANGE_NOISE_M, size=hits.t.shape)
        ranges = hits.t + noise
        luminance = np.einsum("ij,j->i", self.albedo[np.maximum(hits.geometry, 0)],
                              np.array([0.299, 0.587, 0.114]))
        incidence = np.clip(-np.sum(hits.normal * world_dirs, axis=1), 0.0, 1.0)
        intensity = 255.0 * luminance * (0.25 + 0.75 * incidence)
        points = np.column_stack([directions * ranges[:, None], intensity])[hit]
        return points.astype(np.float32)


def _rotate(rotation: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    # einsum, not "@": BLAS threads fighting open3d's for two cores made "@" 100× slower here.
    return np.einsum("ij,nj->ni", rotation, vectors)


def lidar_directions(elevations_deg: np.ndarray, azimuth_step_deg: float) -> np.ndarray:
    """Unit rays (N, 3) of a ring scan in the LiDAR frame, azimuth-major like a spinning head."""
    azimuths = np.deg2rad(np.arange(0.0, 360.0, azimuth_step_deg))
    az, el = np.meshgrid(azimuths, np.deg2rad(np.asarray(elevations_deg)), indexing="ij")
    az, el = az.ravel(), el.ravel()
    return np.column_stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])


def _pixel_grid(width: int, height: int) -> np.ndarray:
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    return np.stack([u, v], axis=-1)


def _unit(rays: np.ndarray) -> np.ndarray:
    return rays / np.linalg.norm(rays, axis=-1, keepdims=True)


def pinhole_directions(K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Unit camera-frame rays (H, W, 3) through the pixel centres of an ideal pinhole image."""
    uv = _pixel_grid(width, height)
    x = (uv[..., 0] - K[0, 2]) / K[0, 0]
    y = (uv[..., 1] - K[1, 2]) / K[1, 1]
    return _unit(np.stack([x, y, np.ones_like(x)], axis=-1))


def fisheye_directions(camera: CameraModel) -> np.ndarray:
    """Unit camera-frame rays (H, W, 3) through the pixel centres of the distorted fisheye image."""
    uv = _pixel_grid(camera.width, camera.height).reshape(1, -1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT + cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    xy = cv2.fisheye.undistortPoints(uv, camera.K, camera.D, criteria=criteria)
    xy = xy.reshape(camera.height, camera.width, 2)
    if not np.all(np.isfinite(xy)):
        raise ValueError(f"fisheye D={camera.D.tolist()} does not invert over the "
                         f"{camera.width}x{camera.height} image; use smaller coefficients")
    return _unit(np.concatenate([xy, np.ones_like(xy[..., :1])], axis=-1))
