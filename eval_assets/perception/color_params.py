"""The colour/shape detector's thresholds, one named field each (how each was measured is in its
docstring). Read by :mod:`~eval_assets.perception.color_detector` and by the shape cues
(:mod:`~eval_assets.perception.shape_cues`), which the detector calls."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ColorShapeParams:
    """Thresholds of the colour/shape detector (fractions unless a unit is given)."""

    min_saturation: float = 0.45
    """HSV saturation a pixel needs to carry a colour; the room's surfaces stay below 0.15."""
    min_value: float = 0.12
    """HSV value a pixel needs; excludes the black rim a fisheye rectification can leave."""
    max_hue_distance_deg: float = 22.0
    """Farthest a pixel's hue may be from its nearest reference hue."""
    min_area_px: int = 100
    """Smallest region reported as an instance."""
    circle_max_residual: float = 0.06
    """Ball: RMS distance of the outline from the fitted circle, over the circle's radius."""
    circle_min_coverage: float = 0.96
    """Ball: share of the fitted circle (inside the image) that the region fills."""
    ellipse_min_axis_ratio: float = 0.6
    """Ball off-axis: shortest short/long axis ratio (a sphere 53° off the optical axis)."""
    ellipse_max_axis_turn_deg: float = 15.0
    """Ball off-axis: largest angle between the long axis and the line from the image centre."""
    ellipse_min_offset: float = 0.1
    """Ball off-axis: centre offset (share of the image's half-diagonal) below which the
    direction from the image centre is too uncertain to check, so only the circle test holds."""
    cylinder_min_slope: float = 0.27
    """Cylinder: median brightness change per column / brightness × region height."""
    erode_px: int = 2
    """Border pixels left out of shading measures (blurred by JPEG and rectification)."""
    min_shading_columns: int = 3
    """Fewer interior columns than this → the outline fallback decides the shape."""
    min_shape_rows: int = 10
    """A region fewer rows tall than this is not reported under any name. Neither cue can tell
    its shape: eroded, it keeps 1–5 rows of shading and its outline is a flat strip whatever the
    object is. Measured on unseen scene seed 1102 (benchmarks/evidence_quality.py): the top
    6–8 rows of a purple cylinder showing over an obstacle were named "purple box" in 21 frames
    with scores 0.73–0.92, making 5 wrong gold answers a frame (presence of each shape,
    direction, count, coverage); no correctly named detection of the sample is that short."""
    max_saturation_offset: float = 0.06
    """Most a named region's median saturation may lie below its reference colour's. Flat
    palette albedos keep their saturation under shading and lose a little to blurred edges
    (scene seeds 1101–1103: at most 0.05 below for every correctly named region but two slivers
    of 145–205 px); the simulated world's mug, teddy bear, jenga block and lego brick
    (``eval-assets recording simulate``, seeds 2201–2203) are 0.08–0.31 below and were all
    misnamed before this check."""
    max_saturation_excess: float = 0.02
    """Most a named region's median saturation may lie above its reference colour's. Shading,
    highlights and blur only desaturate a flat albedo (seeds 1101–1103: at most 0.006 above);
    the simulated duck's body and beak are 0.037–0.09 above (named "yellow cylinder", "orange
    cylinder" before this check), a blue distractor 0.12."""
    max_median_hue_deg: float = 5.0
    """Largest median hue distance of a named region from its reference hue (named palette
    regions: ≤ 2.8°; a simulated lego brick 7.8°, a distractor 11°)."""
    min_name_score: float = 0.72
    """Lowest shape score a named region needs; below it the shape cue was near its threshold
    (or only the outline fallback, score 0.5, decided) and the region is unsure instead.
    Measured on scene seeds 1101-1103 (first 40-60 frames): the two box/cylinder misnamings
    scored 0.51 and 0.70; 19 of 237 correctly named regions scored below 0.72."""
    min_unsure_px: int = 25
    """Smallest region reported as unsure when it is not named (smaller, or too short, or off
    the palette's albedo): half the 50 px from which the truth counts an object as visible, as
    a region's saturated pixels are fewer than the object's (edges blur)."""
    min_clean_px: int = 300
    """Smallest region, unless the frame cuts it, whose shape is named. Below it an object is far
    and its outline and shading no longer resolve what shows an unclean primitive (a concavity,
    a texture patch): rendered at 320×240 (PyBullet's catalogue tinted with the palette,
    1.2–3.5 m away, as far as 2.4–7 m in a 640×480 frame), the 33 views of soccer balls, teddy
    bears and mugs the other cues leave named are all 102–289 px. Scene seeds 1101–1112 (40
    frames each): 4 of 770 correct names are under 300 px, 3 of them cut by the frame and kept
    (as the sample's 185 px sliver of frame 19), and so are 4 of the 6 misnamings (218–299 px)."""
    max_hole_share: float = 0.02
    """Texture: most of the area inside a named region's outline that may be neither the region
    nor another colour. A flat palette albedo leaves none: 0 in all 770 correctly named regions
    of the sample and scene seeds 1101–1112. PyBullet's soccer ball tinted with each palette
    colour (its dark patches are no colour) leaves 3.4–24 % in all 195 of its 640×480 views that
    hsv-shape/4 named; a mug's handle loop up to 14 %."""
    occluder_margin_px: int = 2
    """Pixels of an occluder this close to a pocket or hole fill it: blur leaves a seam of
    neither colour between two objects, 1–2 px wide in the sample (the edge pixels of a region
    within 4 px of another colour: 857 at 1 px, 2,610 at 2, 1,664 at 3, 488 at 4). Fragments of
    one colour twice this close are joined. An occluder is another vocabulary colour for a hole
    and any saturated pixel (``min_saturation``, ``min_value``) not of the region's colour for
    a pocket: the room is desaturated (PyBullet's floor too, at most 0.31)."""
    min_concavity_px: float = 2.5
    """Shallowest pocket (between the outline and its convex hull) the outline cue counts. Open
    pockets of the 770 correctly named regions above are at most 2 px deep (JPEG and
    rectification jitter on a straight edge); the pixel grid's next distances are 2.24 and 2.83."""
    min_occluded_pocket: float = 0.5
    """Share of a pocket that occluders must fill for it to be a nearer object's notch rather
    than the region's own outline. Of the pockets at least ``min_concavity_px`` deep, all 34 in
    the correctly named regions are over 90 % filled; 628 of the 638 of PyBullet's teddy bears
    and mugs (640×480) under half filled, 575 under 10 %."""
    max_concavity: float = 0.05
    """Irregular outline: most a named region's open pockets (summed depths over √hull area) may
    reach. The correctly named regions have none (0); PyBullet's teddy bears are over 0.05 in 146
    of the 149 views hsv-shape/4 named, mugs with the handle in profile 0.11–0.59 (all 65)."""
