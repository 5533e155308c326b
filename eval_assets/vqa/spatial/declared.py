"""The declarations of the spatial families (``shared/specs/spatial.md``) and the motion families
(``shared/specs/motion.md``): one :class:`~eval_assets.family_spec.FamilySpec` each, in the order
the generator asks them and the report lists them.

The rules (generators) live in :mod:`eval_assets.vqa.spatial.families` and
:mod:`eval_assets.vqa.spatial.motion`; a question here is the family's only wording, a template
(``{name}``, ``{other}``, ``{names}``: object names; ``{k}``: an image's position) that the
generator fills with :func:`~eval_assets.vqa.spatial.wording.ask` and, for a multi-frame family,
prefixes with the images being frames of one video in time order.
The time-control facts are those of :mod:`eval_assets.time_controls`'s module docstring.
"""

from __future__ import annotations

from eval_assets.choices import flip_text
from eval_assets.family_spec import Evidence, FamilySpec, TimeControl, register
from eval_assets.schemas.spatial import RELATIVE_DIRECTIONS
from eval_assets.time_controls import reverse_route
from eval_assets.vqa.spatial.either_or import closer_to_camera, larger_object
from eval_assets.vqa.spatial.families import (
    appearance_order,
    camera_distance_m,
    object_count_across_frames,
    object_height_cm,
    object_size_cm,
    pair_distance_m,
    relative_direction,
)
from eval_assets.vqa.spatial.motion import (
    MAX_MOTION_CASES,
    camera_displacement_m,
    egocentric_direction_deg,
    path_length_m,
    route_sequence,
    same_place,
    turn_angle_deg,
    turn_direction,
)


def _same(answer: str) -> str:
    """The gold answer unchanged (a truth that reversing the frames keeps)."""
    return answer


_TRACKS: frozenset[Evidence] = frozenset({"tracks"})
_MOTION: frozenset[Evidence] = frozenset({"trajectory"})
_TRACKS_LIDAR: frozenset[Evidence] = frozenset({"tracks", "lidar"})
_TRACKS_MOTION: frozenset[Evidence] = frozenset({"tracks", "trajectory"})

SPATIAL_DECLARED: tuple[FamilySpec, ...] = tuple(register(spec) for spec in (
    FamilySpec("object_size_cm", "spatial",
               "How long is the longest dimension (length, width or height) of the {name}, in "
               "centimetres?", "number", _TRACKS, object_size_cm, unit="cm",
               paraphrase=(
               "What is the size of the {name} along its longest side (its length, width or "
               "height, whichever is largest), in centimetres?")),
    FamilySpec("pair_distance_m", "spatial",
               "What is the distance between the centre of the {name} and the centre of the "
               "{other}, in metres?", "number", _TRACKS, pair_distance_m, unit="m",
               paraphrase=(
               "How far apart are the centre of the {name} and the centre of the {other}, in "
               "metres?")),
    FamilySpec("camera_distance_m", "spatial",
               "What is the median distance from the camera to the visible surface of the "
               "{name} (over the part of it seen in the image), in metres?", "number",
               _TRACKS_LIDAR, camera_distance_m, unit="m",
               paraphrase=(
               "Over the part of the {name} seen in the image, what is the median distance in "
               "metres from the camera to its visible surface?")),
    # Not generated: no stage builds the room's whole outline (see spatial.families).
    FamilySpec("room_area_m2", "spatial", "What is the floor area of this room, in square "
               "metres?", "number", _TRACKS, None, unit="m2",
               paraphrase=(
               "How many square metres of floor does this room cover?")),
    # Reversed, its truth is each object's last sighting, which the generator never checked:
    # RepeatFrames only.
    FamilySpec("appearance_order", "spatial",
               "In which order did these objects first appear: {names}? Answer with the names "
               "in that order, separated by commas.", "choice", _TRACKS, appearance_order,
               time=TimeControl(None, repeat_frames=True),
               paraphrase=(
               "Sort these objects by when each was first seen: {names}. Answer with the names "
               "in that order, separated by commas.")),
    FamilySpec("object_count_across_frames", "spatial",
               "How many different {name} objects appear across these images? The same object "
               "seen in several images counts once.", "number", _TRACKS,
               object_count_across_frames, time=TimeControl(_same, repeat_frames=True),
               paraphrase=(
               "Counting an object seen in several images only once, how many distinct {name} "
               "objects do these images show?")),
    # Its question names its reference frame by position, which both controls move.
    FamilySpec("relative_direction", "spatial",
               "Imagine standing where the camera stood when it took image {k}, facing the same "
               "way. Is the {name} front-left, front-right, back-left or back-right of you?",
               "choice", _TRACKS_MOTION, relative_direction,
               choices=RELATIVE_DIRECTIONS, time=TimeControl(None, repeat_frames=False),
               paraphrase=(
               "Suppose you stand at the camera's position in image {k}, looking where it "
               "looked. Where is the {name} relative to you: front-left, front-right, "
               "back-left or back-right?")),
    # The floor is the LiDAR's (ObjectTracks.floor_z), the top the track's highest point.
    FamilySpec("object_height_cm", "spatial",
               "How high above the floor is the top of the {name}, in centimetres?", "number",
               _TRACKS_LIDAR, object_height_cm, unit="cm",
               paraphrase=(
               "In centimetres, how far above the floor is the highest point of the {name}?")),
    # Two names as the choices, the gold first in half the cases (its position is balanced).
    FamilySpec("closer_to_camera", "spatial",
               "Which is closer to the camera in this image: the {name} or the {other}?",
               "choice", _TRACKS_LIDAR, closer_to_camera,
               paraphrase=(
               "In this image, which of the two is nearer to the camera: the {name} or the "
               "{other}?")),
    FamilySpec("larger_object", "spatial",
               "Which is larger (its longest dimension): the {name} or the {other}?", "choice",
               _TRACKS, larger_object,
               paraphrase=(
               "Comparing their longest dimensions, which object is bigger: the {name} or the "
               "{other}?")),
    # The robot's own motion: truth from TF alone, no detector.
    FamilySpec("camera_displacement_m", "spatial",
               "How far, in a straight line, is the camera's position in the last image from "
               "its position in the first image, in metres?", "number", _MOTION,
               camera_displacement_m, unit="m", cap=MAX_MOTION_CASES, zero_rule=True,
               time=TimeControl(_same, repeat_frames=True),
               paraphrase=(
               "What is the straight-line distance, in metres, between where the camera was in "
               "the first image and where it is in the last image?")),
    FamilySpec("path_length_m", "spatial",
               "How far did the camera travel along its path from the first image to the last, "
               "in metres?", "number", _MOTION, path_length_m, unit="m", cap=MAX_MOTION_CASES,
               zero_rule=True, time=TimeControl(_same, repeat_frames=True),
               paraphrase=(
               "Following the path the camera took from the first image to the last, how many "
               "metres did it travel?")),
    FamilySpec("turn_direction", "spatial",
               "Between the first and the last image, did the camera turn left, turn right, or "
               "keep its heading (no turn)?", "choice", _MOTION, turn_direction,
               choices=("left", "right", "no turn"), cap=MAX_MOTION_CASES,
               time=TimeControl(flip_text, repeat_frames=True),
               paraphrase=(
               "From the first image to the last, did the camera's heading turn left, turn "
               "right, or stay the same (no turn)?")),
    FamilySpec("turn_angle_deg", "spatial",
               "By how many degrees did the camera turn (about the vertical axis, left or right) "
               "between the first and the last image? Answer in degrees.", "number", _MOTION,
               turn_angle_deg, unit="deg", cap=MAX_MOTION_CASES, magnitude=True,
               time=TimeControl(_same, repeat_frames=False),
               paraphrase=(
               "How many degrees did the camera's heading change (about the vertical axis, to "
               "the left or to the right) from the first image to the last? Answer in degrees.")),
    # Not reversible: its question names the last image.
    FamilySpec("egocentric_direction_deg", "spatial",
               "Imagine standing where the camera is in the last image, facing the way it "
               "faces. In which direction is the {name} (seen in an earlier image)? Answer in "
               "degrees clockwise from straight ahead, from -180 to 180 (90 is to your right, "
               "-90 to your left).", "number",
               _TRACKS_MOTION, egocentric_direction_deg, unit="deg", cap=MAX_MOTION_CASES,
               time=TimeControl(None, repeat_frames=False),
               paraphrase=(
               "Picture yourself at the camera's position in the last image, facing where it "
               "faces. Where is the {name} (seen in an earlier image), in degrees clockwise "
               "from straight ahead, from -180 to 180 (90 is to your right, -90 to your left)?")),
    FamilySpec("route_sequence", "spatial",
               "Which sequence of moves took the camera from where it was in the first image to "
               "where it is in the last? 'forward' is a straight drive ahead, 'turn left' and "
               "'turn right' are turns of 45 degrees or more.", "choice", _MOTION, route_sequence,
               cap=MAX_MOTION_CASES, time=TimeControl(reverse_route, repeat_frames=False),
               paraphrase=(
               "Which series of moves brought the camera from its place in the first image to "
               "its place in the last? 'forward' means driving straight ahead; 'turn left' and "
               "'turn right' mean turns of 45 degrees or more.")),
    FamilySpec("same_place", "spatial",
               "Was the last image taken from about the same place, facing about the same way, "
               "as the first image?", "choice", _MOTION, same_place, choices=("yes", "no"),
               cap=MAX_MOTION_CASES, time=TimeControl(_same, repeat_frames=False),
               paraphrase=(
               "Compared with the first image, was the last image taken from roughly the same "
               "position, facing roughly the same direction?")),
))
