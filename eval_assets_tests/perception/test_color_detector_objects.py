"""The colour/shape detector names a shape only where its evidence is unambiguous: objects it was
not written for are unsure, clean primitives are still named.

Real renders through JPEG (quality 90), as a recording's frames are: PyBullet's tiny renderer (the
simulator's engine) at 320×240 or 640×480, and the synthesizer's scenes at the sample's 640×480.
The simulator's catalogue objects are tinted with palette colours by
``changeVisualShape(rgbaColor=...)``, which keeps a model's texture (the soccer ball's patches).

Measured on 640×480 renders of the same objects (6 colours × 8 azimuths × 3 distances × 3 aims,
1.2–3.5 m), hsv-shape/4 named the soccer ball "box" or "cylinder" in 195 of 432 views, the mug
"box" in 182 (all 54 with its handle in profile on one side) and "cylinder" in 105, the teddy
bear in 149; hsv-shape/5 names no soccer ball, no mug whose handle shows beside its body and 3
teddy bears (side views at 3.5 m). It still calls "box" the mug seen from the side opposite its
handle (54 views: a plain cylinder's silhouette, shaded flat by PyBullet's light from behind,
which the shading cue cannot tell from a box face) and "cylinder" the mug with its handle in
front of its body (39). In the views below (320×240, 1.2–3.5 m) hsv-shape/4 misnamed the ball
in 74 of 144, the mug in 48 of 72 and the teddy bear in 23 of 72; hsv-shape/5 in none.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import cv2
import numpy as np
import pytest

from eval_assets.perception.box_segmenters import RegionSegmenter
from eval_assets.perception.color_detector import ColorShapeDetector, Instance
from eval_assets.sim.geometry import view_matrix
from eval_assets.synth.render import BACKGROUND_ID, SceneRaycaster, pinhole_directions
from eval_assets.synth.sample import world_from_camera
from eval_assets.synth.scene import PALETTE, TourPath, sample_camera
from eval_assets.synth.seeded import seeded_scene
from eval_assets_tests.perception.conftest import RectifiedSample

# The reasons hsv-shape/5 added; a clean palette primitive never has one of them.
UNCLEAN = {"split", "texture", "outline", "box"}
AZIMUTHS = [0.0, 45.0, 90.0, 135.0, 180.0, 225.0, 270.0, 315.0]
DISTANCES = [1.2, 2.4, 3.5]


def _jpeg(rgb: np.ndarray) -> np.ndarray:
    _, buf = cv2.imencode(".jpg", np.ascontiguousarray(rgb[:, :, ::-1]),
                          [cv2.IMWRITE_JPEG_QUALITY, 90])
    decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    assert decoded is not None
    return np.ascontiguousarray(decoded[:, :, ::-1])


def _world_from_camera(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """OpenCV camera pose (x right, y down, z forward) at ``eye`` looking at ``target``."""
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = x, np.cross(z, x), z, eye
    return pose


class Bullet:
    """A PyBullet DIRECT session with the floor; objects tinted with palette colours."""

    def __init__(self) -> None:
        import pybullet as p
        import pybullet_data

        self.p = p
        self.client = p.connect(p.DIRECT)
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=self.client)
        p.loadURDF("plane.urdf", physicsClientId=self.client)

    def _rgba(self, colour: str) -> list[float]:
        return [v / 255.0 for v in PALETTE[colour]] + [1.0]

    def tinted(self, urdf: str, scale: float, colour: str, xyz: tuple[float, float, float],
               yaw_deg: float = 0.0) -> int:
        """A catalogue model, fixed at ``xyz``, tinted (texture kept) with a palette colour."""
        p = self.p
        body = int(p.loadURDF(urdf, list(xyz), p.getQuaternionFromEuler(
            [0.0, 0.0, math.radians(yaw_deg)]), globalScaling=scale, useFixedBase=True,
            physicsClientId=self.client))
        p.changeVisualShape(body, -1, rgbaColor=self._rgba(colour), physicsClientId=self.client)
        return body

    def primitive(self, shape: str, colour: str, xyz: tuple[float, float, float],
                  size: tuple[float, ...], yaw_deg: float = 0.0) -> int:
        """A palette box (half extents), ball (radius) or upright cylinder (radius, length)."""
        p = self.p
        if shape == "box":
            visual = p.createVisualShape(p.GEOM_BOX, halfExtents=list(size),
                                         rgbaColor=self._rgba(colour), physicsClientId=self.client)
        elif shape == "ball":
            visual = p.createVisualShape(p.GEOM_SPHERE, radius=size[0],
                                         rgbaColor=self._rgba(colour), physicsClientId=self.client)
        else:
            visual = p.createVisualShape(p.GEOM_CYLINDER, radius=size[0], length=size[1],
                                         rgbaColor=self._rgba(colour), physicsClientId=self.client)
        return int(p.createMultiBody(0, -1, visual, basePosition=list(xyz),
                                     baseOrientation=p.getQuaternionFromEuler(
                                         [0.0, 0.0, math.radians(yaw_deg)]),
                                     physicsClientId=self.client))

    def remove(self, body: int) -> None:
        """Take ``body`` out of the scene."""
        self.p.removeBody(body, physicsClientId=self.client)

    def render(self, eye: np.ndarray, target: np.ndarray,
               size: tuple[int, int] = (320, 240)) -> tuple[np.ndarray, np.ndarray]:
        """(RGB through JPEG, body id per pixel, −1 for none) seen from ``eye``."""
        p, (w, h) = self.p, size
        proj = p.computeProjectionMatrixFOV(60.0, w / h, 0.1, 30.0)
        _, _, rgba, _, seg = p.getCameraImage(
            w, h, view_matrix(_world_from_camera(eye, target)), proj,
            renderer=p.ER_TINY_RENDERER, physicsClientId=self.client)
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(h, w, 4)[:, :, :3]
        seg = np.asarray(seg, dtype=np.int64).reshape(h, w)
        return _jpeg(rgb), np.where(seg >= 0, seg & 0xFFFFFF, -1)


@pytest.fixture(scope="module")
def bullet() -> Iterator[Bullet]:
    world = Bullet()
    yield world
    world.p.disconnect(physicsClientId=world.client)


def _eye(azimuth_deg: float, distance: float, height: float = 0.65) -> np.ndarray:
    a = math.radians(azimuth_deg)
    return np.array([distance * math.cos(a), distance * math.sin(a), height])


def _on(instances: list[Instance], ids: np.ndarray, body: int) -> list[Instance]:
    """The instances whose box is mostly ``body``'s pixels."""
    out = []
    for i in instances:
        x0, y0, x1, y1 = (int(v) for v in i.box_xyxy)
        if (ids[y0:y1, x0:x1] == body).mean() > 0.3:
            out.append(i)
    return out


def _views(bullet: Bullet, body: int, azimuths: list[float],
           target: np.ndarray) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    for azimuth in azimuths:
        for distance in DISTANCES:
            image, ids = bullet.render(_eye(azimuth, distance), target)
            yield f"azimuth {azimuth:g}°, {distance} m", image, ids


def _assert_unsure_not_named(detector: ColorShapeDetector, image: np.ndarray, ids: np.ndarray,
                             body: int, colour: str, allowed: set[str], view: str) -> None:
    """Nothing on ``body`` is named outside ``allowed``; unnamed, it is unsure under every name
    of its colour (so "Does the image contain any <colour> box?" is not answered "no")."""
    seen = _on(detector.instances(image), ids, body)
    assert seen, f"{view}: the object was not seen at all"
    wrong = [(i.shape, round(i.score, 2)) for i in seen if i.sure and i.shape not in allowed]
    assert wrong == [], f"{view}: named {wrong}"
    if not any(i.sure for i in seen):
        for shape in ("box", "ball", "cylinder"):
            assert detector.unsure(image, f"{colour} {shape}"), f"{view}: not unsure"


@pytest.mark.parametrize("colour", list(PALETTE))
def test_a_textured_ball_is_never_a_box_or_a_cylinder(bullet: Bullet, colour: str) -> None:
    """The soccer ball's checker of patches, tinted: the dark patches are no colour (holes) or,
    far off, a ball too small to check; hsv-shape/4 called it "box" or "cylinder"."""
    detector = ColorShapeDetector()
    ball = bullet.tinted("soccerball.urdf", 0.3, colour, (0.0, 0.0, 0.15))
    try:
        for view, image, ids in _views(bullet, ball, AZIMUTHS, np.array([0.0, 0.0, 0.12])):
            _assert_unsure_not_named(detector, image, ids, ball, colour, {"ball"}, view)
    finally:
        bullet.remove(ball)


@pytest.mark.parametrize("colour", ["blue", "red", "green", "purple"])
def test_a_mug_side_on_is_not_named(bullet: Bullet, colour: str) -> None:
    """A mug with its handle in profile (left or right of the body, ±20°): hsv-shape/4 called the
    blue one "box" in every such view, so "Does the image contain any blue cylinder?" was "no"."""
    detector = ColorShapeDetector()
    mug = bullet.tinted("objects/mug.urdf", 3.0, colour, (0.0, 0.0, 0.0))
    try:
        for view, image, ids in _views(bullet, mug, [-20.0, 0.0, 20.0, 160.0, 180.0, 200.0],
                                       np.array([0.0, 0.0, 0.12])):
            _assert_unsure_not_named(detector, image, ids, mug, colour, set(), view)
    finally:
        bullet.remove(mug)


@pytest.mark.parametrize("colour", ["red", "blue", "yellow"])
def test_a_teddy_bear_is_not_named(bullet: Bullet, colour: str) -> None:
    """Limbs and ears: an outline with open pockets (or, far off, too small to check)."""
    detector = ColorShapeDetector()
    teddy = bullet.tinted("teddy_vhacd.urdf", 3.5, colour, (0.0, 0.0, 0.0))
    try:
        for view, image, ids in _views(bullet, teddy, AZIMUTHS, np.array([0.0, 0.0, 0.12])):
            _assert_unsure_not_named(detector, image, ids, teddy, colour, set(), view)
    finally:
        bullet.remove(teddy)


def _masks_are_their_own(image: np.ndarray, ids: np.ndarray, detector: ColorShapeDetector,
                         bodies: set[int]) -> None:
    """The ``box_region`` mask of every named instance lies on one of ``bodies``, not on
    whatever else its box holds."""
    segmenter = RegionSegmenter()
    for i in detector.instances(image):
        if i.sure:
            mask = segmenter.segment(image, i.box_xyxy)
            values, counts = np.unique(ids[mask], return_counts=True)
            top = int(values[np.argmax(counts)])
            assert top in bodies and counts.max() >= 0.9 * mask.sum(), (i, dict(zip(
                values.tolist(), counts.tolist(), strict=True)))


def test_a_box_split_by_a_nearer_mug_is_not_two_boxes(bullet: Bullet) -> None:
    """A purple box behind a red mug shows as two purple pieces, each large enough to name:
    hsv-shape/4 counted three purple boxes where there are two."""
    detector = ColorShapeDetector()
    split = bullet.primitive("box", "purple", (2.2, 0.0, 0.08), (0.15, 0.3, 0.08))
    other = bullet.primitive("box", "purple", (2.0, 1.0, 0.12), (0.12, 0.12, 0.12), yaw_deg=30)
    mug = bullet.tinted("objects/mug.urdf", 3.0, "red", (1.6, 0.05, 0.0), yaw_deg=90)
    try:
        image, ids = bullet.render(np.array([0.0, 0.0, 0.4]), np.array([1.8, 0.0, 0.15]),
                                   size=(640, 480))
        pieces = _on(detector.instances(image), ids, split)
        assert len(pieces) == 2 and all(i.area >= 300 for i in pieces), pieces
        assert [i.why for i in pieces] == ["split", "split"]
        boxes = detector.detect(image, "purple box")
        assert len(boxes) == 1 and _on(detector.instances(image), ids, other)[0].sure
        # Two purple boxes and an unsure region: "how many purple boxes?" is not asked.
        assert len(detector.unsure(image, "purple box")) == 2
        _masks_are_their_own(image, ids, detector, {split, other, mug})
    finally:
        for body in (split, other, mug):
            bullet.remove(body)


def test_a_region_whose_own_box_is_another_object_is_not_named(bullet: Bullet) -> None:
    """A purple box showing round a red mug in front of it: the purple region's box is mostly
    the mug, so the box-region segmenter (the box's dominant colour) would give the purple box
    the mug's pixels as its mask. hsv-shape/4 named it "purple box"; now it is unsure."""
    detector = ColorShapeDetector()
    box = bullet.primitive("box", "purple", (2.2, 0.0, 0.15), (0.15, 0.3, 0.15))
    mug = bullet.tinted("objects/mug.urdf", 4.0, "red", (1.2, 0.0, 0.0), yaw_deg=90)
    try:
        image, ids = bullet.render(np.array([0.0, 0.0, 0.65]), np.array([1.8, 0.0, 0.15]))
        purple = [i for i in detector.instances(image) if i.color == "purple"]
        assert [(i.sure, i.why) for i in purple] == [(False, "box")]
        x0, y0, x1, y1 = (int(v) for v in purple[0].box_xyxy)
        assert (ids[y0:y1, x0:x1] == mug).sum() > (ids[y0:y1, x0:x1] == box).sum()
        assert detector.detect(image, "purple box") == []
        assert detector.unsure(image, "purple box") != []
        _masks_are_their_own(image, ids, detector, {box, mug})
    finally:
        for body in (box, mug):
            bullet.remove(body)


def test_pybullet_primitives_are_still_named(bullet: Bullet) -> None:
    """A palette box, ball and cylinder in the other renderer: never refused by the new cues,
    the ball and box named in every view, each name right."""
    detector = ColorShapeDetector()
    bodies = {
        bullet.primitive("box", "blue", (2.0, 0.6, 0.15), (0.15, 0.15, 0.15), yaw_deg=17): "box",
        bullet.primitive("ball", "red", (2.0, 0.0, 0.15), (0.15,)): "ball",
        bullet.primitive("cylinder", "green", (2.0, -0.6, 0.2), (0.12, 0.4)): "cylinder",
    }
    try:
        for azimuth in (-40.0, -20.0, 0.0, 20.0, 40.0):
            target = np.array([2.0, 0.0, 0.15])
            eye = target + _eye(180.0 + azimuth, 2.0, 0.5)
            image, ids = bullet.render(eye, target)
            for body, shape in bodies.items():
                seen = _on(detector.instances(image), ids, body)
                assert len(seen) == 1 and seen[0].why not in UNCLEAN, (azimuth, seen)
                assert seen[0].shape in (shape, ""), (azimuth, seen)
                assert shape == "cylinder" or seen[0].sure, (azimuth, seen)
            _masks_are_their_own(image, ids, detector, set(bodies))
    finally:
        for body in bodies:
            bullet.remove(body)


def test_the_sample_never_trips_the_clean_primitive_cues(
        rectified_sample: RectifiedSample) -> None:
    detector = ColorShapeDetector()
    for frame, image in zip(rectified_sample.frames, rectified_sample.images, strict=True):
        tripped = [i for i in detector.instances(image) if i.why in UNCLEAN]
        assert tripped == [], (frame.frame_index, tripped)


def _objects_under(instance: Instance, labels: np.ndarray, colour: int,
                   ids: np.ndarray) -> list[int]:
    """Truth ids (background 255 included) holding 100 pixels or more of an instance's colour in
    its box (as many as the smallest region the detector reports)."""
    x0, y0, x1, y1 = (int(v) for v in instance.box_xyxy)
    under = ids[y0:y1, x0:x1][labels[y0:y1, x0:x1] == colour]
    values, counts = np.unique(under, return_counts=True)
    return [int(v) for v, c in zip(values, counts, strict=True) if c >= 100]


def test_synthesized_scenes_never_trip_the_clean_primitive_cues() -> None:
    """Sample-like scenes of the synthesizer (seeded rooms, the sample's camera, pinhole views
    through JPEG): palette primitives, occluding each other and cut by the frame, among textured
    and plain distractors. One primitive's region is never refused for texture, outline, split
    or box; a region that is two objects of one colour touching in the image may be."""
    camera = sample_camera()
    rays = pinhole_directions(camera.K_rect, camera.width, camera.height)
    detector = ColorShapeDetector()
    named = merged = 0
    for seed in (31, 32, 33):
        scene = seeded_scene(seed, camera)
        raycaster = SceneRaycaster(scene)
        assert isinstance(scene.path, TourPath)
        for lap_fraction in (0.1, 0.35, 0.6, 0.85):
            t = scene.path.t_start + lap_fraction * scene.path.lap_duration_s
            view = raycaster.render(world_from_camera(scene, t), rays)
            assert view.rgb is not None
            image = _jpeg(view.rgb)
            labels = detector.classifier.labels(image)
            for i in detector.instances(image):
                named += i.sure
                if i.why in UNCLEAN:
                    objects = _objects_under(i, labels, detector.classifier.colors.index(
                        i.color), view.ids)
                    assert len(set(objects) - {BACKGROUND_ID}) >= 2, (seed, lap_fraction, i)
                    merged += 1
    assert named >= 15  # the views do show objects (17, as hsv-shape/4 named)
    assert merged <= 2  # seed 31 at 0.6: two orange balls, one behind the other
