"""Overlays: boxes, mask outlines and LiDAR points really change the pixels where they are, and
nothing changes the colour inside a mask."""

from __future__ import annotations

import numpy as np
import pytest

from eval_assets.report.overlays import (
    PALETTE,
    depth_colours,
    encode_png,
    project_points,
    render_overlay,
)
from eval_assets_tests.report.builders import HEIGHT, WIDTH, box_mask, frame_image


def test_overlay_draws_boxes_masks_and_points_where_they_are() -> None:
    image = frame_image()
    before = image.copy()
    mask = box_mask()
    points = np.array([[50, 5], [40, 40]])
    depths = np.array([0.5, 3.9])
    out = render_overlay(image, [((8, 10, 24, 30), "")], [mask], points, depths)
    assert np.array_equal(image, before), "the input must not be modified"
    # Box edge (left side, halfway down) in the first palette colour.
    assert tuple(out[20, 8]) == PALETTE[0]
    # The mask's inside keeps the object's own colour: no tint.
    assert np.array_equal(out[15:25, 13:19], image[15:25, 13:19])
    # Without the box (whose dark edge covers it here), the mask's outline runs along its edge
    # pixels (column 10 is its left edge) on a dark underlay just outside.
    alone = render_overlay(image, [], [mask])
    assert tuple(alone[20, 10]) == PALETTE[0] and tuple(alone[20, 9]) == (0, 0, 0)
    assert np.array_equal(alone[15:25, 13:19], image[15:25, 13:19])
    # Points in their depth colour; near and far differ.
    colours = depth_colours(depths)
    assert tuple(out[5, 50]) == tuple(colours[0])
    assert tuple(out[40, 40]) == tuple(colours[1])
    assert tuple(colours[0]) != tuple(colours[1])
    # Far from everything: untouched.
    assert tuple(out[45, 2]) == tuple(image[45, 2])


def test_an_orange_object_stays_orange_under_its_mask() -> None:
    orange = (255, 140, 0)
    image = np.full((96, 128, 3), 90, dtype=np.uint8)
    yy, xx = np.mgrid[:96, :128]
    ball = (yy - 48) ** 2 + (xx - 64) ** 2 <= 20**2
    image[ball] = orange
    # A blue outline colour: the old 40% tint turned this orange to (245, 168, 94)-ish grey.
    out = render_overlay(image, [], [np.zeros_like(ball), ball])
    inner = (yy - 48) ** 2 + (xx - 64) ** 2 <= 16**2
    assert np.all(out[inner] == orange)
    assert not np.array_equal(out[ball & ~inner], image[ball & ~inner])  # the outline is there


def test_labels_are_drawn_and_do_not_overlap() -> None:
    image = np.full((HEIGHT * 4, WIDTH * 4, 3), 128, dtype=np.uint8)
    boxes = [((40, 100, 120, 180), "first"), ((44, 104, 124, 184), "second")]
    plain = render_overlay(image, [(b[0], "") for b in boxes], [])
    labelled = render_overlay(image, boxes, [])
    changed = np.any(labelled != plain, axis=2)

    def extent(colour: tuple[int, int, int]) -> tuple[int, int, int, int]:
        ys, xs = np.nonzero(changed & np.all(labelled == colour, axis=2))
        assert ys.size > 50, "a label background of this colour was drawn"
        return xs.min(), ys.min(), xs.max(), ys.max()

    a, b = extent(PALETTE[0]), extent(PALETTE[1])
    assert a[3] < b[1] or b[3] < a[1] or a[2] < b[0] or b[2] < a[0], (a, b)


def test_overlay_rejects_bad_inputs() -> None:
    image = frame_image()
    with pytest.raises(ValueError, match="mask 0 has shape"):
        render_overlay(image, [], [np.zeros((3, 3), bool)])
    with pytest.raises(ValueError, match="pass both or neither"):
        render_overlay(image, [], [], np.zeros((1, 2)), None)
    with pytest.raises(ValueError, match="x0 < x1"):
        render_overlay(image, [((5, 5, 5, 9), "flat")], [])
    with pytest.raises(ValueError, match="RGB uint8"):
        render_overlay(image.astype(np.float32), [], [])


def test_project_points_matches_the_pinhole_model_and_png_is_deterministic() -> None:
    K = np.array([[50.0, 0, 32], [0, 50, 24], [0, 0, 1]])
    pts = np.array([[0.0, 0.0, 2.0], [0.4, 0.2, 1.0], [0.0, 0.0, -1.0]])
    uv, rng = project_points(pts, np.eye(4), K, WIDTH, HEIGHT)
    got = {(int(u), int(v)): r for (u, v), r in zip(uv, rng, strict=True)}
    assert got.keys() == {(32, 24), (52, 34)}  # behind-the-camera point dropped
    assert got[(52, 34)] == pytest.approx(np.sqrt(0.16 + 0.04 + 1.0))
    assert encode_png(frame_image()) == encode_png(frame_image())
