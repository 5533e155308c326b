"""Ray-cast renders of the sample scene with ``open3d.t.geometry.RaycastingScene`` on the CPU.

The camera image is rendered *distorted*: every pixel centre of the fisheye image is undistorted
with ``cv2.fisheye.undistortPoints`` into its viewing ray, so a reader that rectifies with the
recorded ``K``/``D``/``P`` gets back the ideal pinhole view that :func:`pinhole_directions`
renders for the ground truth. Pixel centres are at integer coordinates (OpenCV convention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import open3d as o3d

from eval_assets.synth.scene import SHAPES, CameraModel, Distractor, Scene, SceneObject, Slab, rot_z

BACKGROUND_ID = 255
"""Id-map value of every pixel that shows no object (room surfaces, or nothing)."""

_SUN = np.array([0.35, 0.25, 1.0]) / np.linalg.norm([0.35, 0.25, 1.0])
# Ambient + sun + camera "headlight" weights sum to 1, so shading never clips an albedo and the
# objects' hue and saturation survive in the image for an HSV detector.
_AMBIENT, _SUN_WEIGHT, _HEAD_WEIGHT = 0.40, 0.33, 0.27
_LIDAR_RANGE_NOISE_M = 0.01
_O3D_DTYPES = {np.float32: o3d.core.float32, np.uint32: o3d.core.uint32}


@dataclass(frozen=True)
class Hits:
    """First hits of a batch of unit rays: distance (inf on a miss), geometry id, unit normal."""

    t: np.ndarray  # (N,) float64 metres
    geometry: np.ndarray  # (N,) int64, −1 on a miss
    normal: np.ndarray  # (N, 3) world frame, facing the ray
    origin: np.ndarray | None = None  # (3,) the rays' common origin, world frame
    directions: np.ndarray | None = None  # (N, 3) the unit rays, world frame
    cos_incidence: np.ndarray | None = None  # (N,) normal · (−ray), from cast()

    def points(self, index: np.ndarray) -> np.ndarray:
        """(len(index), 3) world hit points of the rays at ``index`` (all of them must hit)."""
        if self.origin is None or self.directions is None:
            raise ValueError("these hits were made without their rays; cast them with cast()")
        return self.origin + self.directions[index] * self.t[index][:, None]


@dataclass(frozen=True)
class View:
    """One rendered camera view: colour, per-pixel object id and hit distance from the camera."""

    rgb: np.ndarray | None  # (H, W, 3) uint8; None when rendered without colour
    ids: np.ndarray  # (H, W) uint8, BACKGROUND_ID where no object
    distance: np.ndarray  # (H, W) float64 metres (Euclidean, camera origin to hit)


def _tensor(array: np.ndarray) -> o3d.core.Tensor:
    """An open3d copy of ``array`` on the CPU, with its dtype (the stubs require both)."""
    return o3d.core.Tensor(array, _O3D_DTYPES[array.dtype.type], o3d.core.Device("CPU:0"))


def _box_mesh(center: np.ndarray, size: np.ndarray) -> o3d.geometry.TriangleMesh:
    mesh = o3d.geometry.TriangleMesh.create_box(*size)
    # translate and rotate move the mesh in place (and return it typed as a bare Geometry3D).
    mesh.translate(center - size / 2)
    return mesh


def _solid_mesh(shape: str, center_xyz: tuple[float, float, float],
                size_xyz: tuple[float, float, float], yaw: float,
                label: str) -> o3d.geometry.TriangleMesh:
    center, size = np.array(center_xyz), np.array(size_xyz)
    if shape == "box":
        mesh = _box_mesh(center, size)
        # Only a turned box is rotated: the sample's boxes keep their exact vertices.
        if yaw:
            mesh.rotate(rot_z(yaw), center=center)
        return mesh
    if shape == "ball":
        # 48 bands keep the facets' sagitta below 0.1 px at the closest viewing distance.
        mesh = o3d.geometry.TriangleMesh.create_sphere(radius=size[0] / 2, resolution=48)
        mesh.translate(center)
        return mesh
    if shape == "cylinder":
        mesh = o3d.geometry.TriangleMesh.create_cylinder(radius=size[0] / 2, height=size[2],
                                                         resolution=96, split=1)
        mesh.translate(center)
        return mesh
    raise ValueError(f"{label} has unknown shape {shape!r}; use one of {', '.join(SHAPES)}")


def _object_mesh(obj: SceneObject) -> o3d.geometry.TriangleMesh:
    return _solid_mesh(obj.shape, obj.center, obj.size, obj.yaw,
                       f"object {obj.id} ({obj.name!r})")


def _distractor_mesh(item: Distractor) -> o3d.geometry.TriangleMesh:
    return _solid_mesh(item.shape, item.center, item.size, item.yaw,
                       f"distractor {item.kind!r}")


def _slab_mesh(slab: Slab) -> o3d.geometry.TriangleMesh:
    lo, hi = np.array(slab.lo), np.array(slab.hi)
    return _box_mesh((lo + hi) / 2, hi - lo)


class SceneRaycaster:
    """The scene's meshes in one ``RaycastingScene``, with per-geometry albedo and object id.

    Geometry ids: the objects first (geometry id = object id), then the room, then distractors.
    Distractors, like the room, are background in id maps: they have no vocabulary name.
    """

    def __init__(self, scene: Scene) -> None:
        """Build the acceleration structure: objects, room, distractors, in that order."""
        self._scene = o3d.t.geometry.RaycastingScene()
        meshes = ([_object_mesh(o) for o in scene.objects] + [_slab_mesh(s) for s in scene.room]
                  + [_distractor_mesh(d) for d in scene.distractors])
        for expected, mesh in enumerate(meshes):
            vertices = np.asarray(mesh.vertices, dtype=np.float32)
            triangles = np.asarray(mesh.triangles, dtype=np.uint32)
            gid = self._scene.add_triangles(_tensor(vertices), _tensor(triangles))
            if gid != expected:
                raise RuntimeError(f"open3d assigned geometry id {gid}, expected {expected}")
        n_obj = len(scene.objects)
        if n_obj >= BACKGROUND_ID:
            raise ValueError(f"the scene has {n_obj} objects; id maps are uint8 with "
                             f"{BACKGROUND_ID} as background, so use at most {BACKGROUND_ID}")
        rgbs = ([o.rgb for o in scene.objects] + [s.rgb for s in scene.room]
                + [d.rgb for d in scene.distractors])
        self.albedo = np.array(rgbs, dtype=np.float64) / 255.0
        n_background = len(scene.room) + len(scene.distractors)
        self.object_id = np.array(list(range(n_obj)) + [BACKGROUND_ID] * n_background,
                                  dtype=np.uint8)
        first_distractor = n_obj + len(scene.room)
        # (geometry id, shape, centre) of every curved solid, whose normals are made smooth.
        self._curved = [(o.id, o.shape, np.array(o.center)) for o in scene.objects
                        if o.shape != "box"]
        self._curved += [(first_distractor + k, d.shape, np.array(d.center))
                         for k, d in enumerate(scene.distractors) if d.shape != "box"]
        self._is_curved = np.zeros(len(meshes) + 1, dtype=bool)  # indexed by geometry id + 1
        self._is_curved[[gid + 1 for gid, _, _ in self._curved]] = True
        self._textures = [(first_distractor + k, d) for k, d in enumerate(scene.distractors)
                          if d.texture != "plain"]
        for _, d in self._textures:
            if d.texture not in ("checker", "stripes") or d.period_m <= 0.0:
                raise ValueError(f"distractor {d.kind!r}: texture {d.texture!r} with period "
                                 f"{d.period_m} m; use 'plain', or 'checker'/'stripes' with a "
                                 "period > 0")

    def cast(self, origin: np.ndarray, directions: np.ndarray) -> Hits:
        """Cast unit ``directions`` (N, 3) from one ``origin`` (3,), all in the world frame."""
        n = directions.shape[0]
        rays = np.empty((n, 6), dtype=np.float32)
        rays[:, :3] = origin
        rays[:, 3:] = directions
        out = self._scene.cast_rays(_tensor(rays))
        t = out["t_hit"].numpy().astype(np.float64)
        hit = np.isfinite(t)
        geometry = out["geometry_ids"].numpy().astype(np.int64)
        geometry[~hit] = -1
        normal = out["primitive_normals"].numpy().astype(np.float64)
        # Smooth analytic normals on curved surfaces: triangle normals would facet the shading.
        # Only the rays that hit a curved solid are touched (a full-image mask per solid costs
        # more than the ray casting at 1280x720); each value is computed as for a full mask.
        curved = np.flatnonzero(self._is_curved[geometry + 1])
        if curved.size:
            on = geometry[curved]
            for gid, shape, center in self._curved:
                sel = on == gid
                if shape == "cylinder":
                    sel &= np.abs(normal[curved, 2]) < 0.5  # the caps keep their flat normal
                index = curved[sel]
                radial = origin + directions[index] * t[index][:, None] - center
                if shape == "cylinder":
                    radial[:, 2] = 0.0
                normal[index] = radial / np.linalg.norm(radial, axis=1, keepdims=True)
        cos = _dot_rows(normal, directions)
        facing = cos > 0.0
        np.negative(normal, out=normal, where=facing[:, None])
        # Cosine between the (now facing) normal and the reversed ray, for shading and LiDAR
        # intensity: the same bits as −Σ(normal · ray) after the flip (negation is exact).
        np.negative(cos, out=cos, where=~facing)
        return Hits(t=t, geometry=geometry, normal=normal, origin=np.asarray(origin),
                    directions=directions, cos_incidence=cos)

    def _texture(self, albedo: np.ndarray, hits: Hits) -> np.ndarray:
        """``albedo`` (N, 3) with every textured distractor's pattern painted in, in place."""
        for gid, item in self._textures:
            index = np.flatnonzero(hits.geometry == gid)
            if index.size == 0:
                continue
            # Cells in world coordinates: on an axis-aligned face one coordinate is constant and
            # only flips the parity, so a 3-D checker draws a 2-D one on every face.
            cells = np.floor(hits.points(index) / item.period_m).astype(np.int64)
            by_cell = cells.sum(axis=1) if item.texture == "checker" else cells[:, 2]
            dark = by_cell % 2 == 1
            albedo[index[dark]] = np.array(item.rgb2, dtype=np.float64) / 255.0
        return albedo

    def shade(self, hits: Hits, directions: np.ndarray) -> np.ndarray:
        """Lambertian colour (N, 3) uint8: ambient + sun from above + headlight; misses black."""
        hit = hits.geometry >= 0
        sun = np.clip(np.einsum("ij,j->i", hits.normal, _SUN), 0.0, None)
        head = np.clip(_cos_incidence(hits, directions), 0.0, None)
        light = _AMBIENT + _SUN_WEIGHT * sun + _HEAD_WEIGHT * head
        albedo = np.take(self.albedo, np.maximum(hits.geometry, 0), axis=0)
        if self._textures:
            albedo = self._texture(albedo, hits)
        # In place, one pass per step: at 1280x720 the temporaries cost more than the arithmetic.
        rgb = np.multiply(albedo, light[:, None], out=albedo)
        rgb[~hit] = 0.0
        rgb *= 255.0
        np.rint(rgb, out=rgb)
        np.clip(rgb, 0, 255, out=rgb)
        return rgb.astype(np.uint8)

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
        """One 360° ring scan as (N, 4) float32 x, y, z, intensity in the LiDAR frame.

        See :meth:`scan`; the rays are :func:`lidar_directions` of the rings.
        """
        return self.scan(world_from_lidar, lidar_directions(elevations_deg, azimuth_step_deg), rng)

    def scan(self, world_from_lidar: np.ndarray, directions: np.ndarray,
             rng: np.random.Generator) -> np.ndarray:
        """One scan of LiDAR-frame unit ``directions`` as (N, 4) float32 x, y, z, intensity.

        Misses are dropped. Ranges get Gaussian noise (σ = 1 cm, like a Mid-360); intensity is a
        0–255 reflectivity from the albedo's luminance and the incidence angle.
        """
        world_dirs = _rotate(world_from_lidar[:3, :3], directions)
        hits = self.cast(world_from_lidar[:3, 3], world_dirs)
        hit = np.isfinite(hits.t)
        noise = rng.normal(0.0, _LIDAR_RANGE_NOISE_M, size=hits.t.shape)
        ranges = hits.t + noise
        albedo = self.albedo[np.maximum(hits.geometry, 0)]
        if self._textures:
            albedo = self._texture(albedo, hits)
        luminance = np.einsum("ij,j->i", albedo, np.array([0.299, 0.587, 0.114]))
        incidence = np.clip(_cos_incidence(hits, world_dirs), 0.0, 1.0)
        intensity = 255.0 * luminance * (0.25 + 0.75 * incidence)
        points = np.column_stack([directions * ranges[:, None], intensity])[hit]
        return points.astype(np.float32)


def _dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of two (N, 3) arrays: the same bits as ``np.sum(a * b, axis=1)``
    (which adds left to right), in a third of its time."""
    out = a[:, 0] * b[:, 0]
    out += a[:, 1] * b[:, 1]
    out += a[:, 2] * b[:, 2]
    return out


def _cos_incidence(hits: Hits, directions: np.ndarray) -> np.ndarray:
    """Cosine between each hit's normal and the reversed ray (may be −0.0 or slightly < 0)."""
    if hits.cos_incidence is not None and hits.directions is directions:
        return hits.cos_incidence
    return -_dot_rows(hits.normal, directions)


def _rotate(rotation: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    # einsum, not "@": BLAS threads fighting open3d's for two cores made "@" 100× slower here.
    return np.einsum("ij,nj->ni", rotation, vectors)


def lidar_directions(elevations_deg: np.ndarray, azimuth_step_deg: float) -> np.ndarray:
    """Unit rays (N, 3) of a ring scan in the LiDAR frame, azimuth-major like a spinning head."""
    azimuths = np.deg2rad(np.arange(0.0, 360.0, azimuth_step_deg))
    az, el = np.meshgrid(azimuths, np.deg2rad(np.asarray(elevations_deg)), indexing="ij")
    az, el = az.ravel(), el.ravel()
    return np.column_stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])


# Livox Mid-360: 360° around, −7° to +52° in elevation, 200 000 points/s. Its rosette pattern
# does not repeat from scan to scan; an R2 low-discrepancy sequence continued across scans has the
# same effect (every scan a fresh, even sprinkle of the field; together they fill it).
MID360_ELEVATION_DEG = (-7.0, 52.0)
_R2 = 1.32471795724474602596  # the plastic number: R2 uses 1/g and 1/g²


def mid360_directions(scan_index: int, points: int) -> np.ndarray:
    """Unit rays (points, 3) of scan ``scan_index`` of a Mid-360-like non-repeating pattern.

    Azimuths are uniform over 360°, elevations uniform in solid angle over −7°…+52°.
    """
    if points < 1 or scan_index < 0:
        raise ValueError(f"a scan needs ≥ 1 point and index ≥ 0, got {points}, {scan_index}")
    n = np.arange(scan_index * points, (scan_index + 1) * points, dtype=np.float64)
    u = (0.5 + n / _R2) % 1.0
    v = (0.5 + n / (_R2 * _R2)) % 1.0
    lo, hi = (math.sin(math.radians(e)) for e in MID360_ELEVATION_DEG)
    sin_el = lo + v * (hi - lo)
    cos_el = np.sqrt(1.0 - sin_el * sin_el)
    az = 2.0 * math.pi * u
    return np.column_stack([cos_el * np.cos(az), cos_el * np.sin(az), sin_el])


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
