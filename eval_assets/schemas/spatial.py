"""Records of the spatial families: object tracks, and the second public file of cases.

dimOS's ``cases.jsonl``/``labels.jsonl`` hold single-image multiple-choice rows only and stay
exactly dimOS's (:mod:`eval_assets.schemas.vqa`). The families beyond dimOS (numeric answers and
questions across frames, ``../shared/specs/spatial.md``) live beside them:

- ``spatial_cases.jsonl``: :class:`SpatialCase`, what a model under test may see (a list of images
  in time order, the question, the answer type, choices or unit);
- ``spatial_labels.jsonl``: :class:`SpatialPrivateLabel`, id and answer (numbers as decimal
  strings);
- ``audit/spatial_labels.jsonl``: :class:`SpatialLabel`, the answer with everything that decided
  it (frames, objects, ``evidence.tracks`` with world-frame centres), checkable against the
  synthesizer's scene truth.

The tracks asset writes :class:`ObjectTracks`: detections lifted to 3D with LiDAR and TF and fused
across frames into world-frame objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eval_assets.layout import AUDIT_SPATIAL_LABELS as AUDIT_SPATIAL_LABELS
from eval_assets.layout import SPATIAL_CASES as SPATIAL_CASES
from eval_assets.layout import SPATIAL_LABELS as SPATIAL_LABELS
from eval_assets.layout import TRACKS_FILE as TRACKS_FILE
from eval_assets.schemas.objects import LidarObjectsRecord
from eval_assets.schemas.vqa import NonEmptyString, distinct_choices

AnswerType = Literal["choice", "number"]
Unit = Literal["cm", "m", "m2", "deg"]



def spatial_families() -> dict[str, tuple[AnswerType, Unit | None]]:
    """Every declared spatial family (:mod:`eval_assets.family_spec`, ``file="spatial"``) ->
    (answer type, unit or None), in declaration order."""
    from eval_assets.family_spec import families

    return {s.name: (s.answer_type, cast("Unit | None", s.unit)) for s in families("spatial")}


class _DeclaredSpatialFamilies(Mapping[str, tuple[AnswerType, "Unit | None"]]):
    """A live view of :func:`spatial_families`: each lookup reads the declarations, so a module
    may bind it at import time (before the declarations are loaded) and read it later."""

    def __getitem__(self, family: str) -> tuple[AnswerType, Unit | None]:
        return spatial_families()[family]

    def __iter__(self) -> Iterator[str]:
        return iter(spatial_families())

    def __len__(self) -> int:
        return len(spatial_families())


# Family -> (answer type, unit or None), read from the declarations on each lookup.
SPATIAL_FAMILIES: Mapping[str, tuple[AnswerType, Unit | None]] = _DeclaredSpatialFamilies()


def __getattr__(name: str) -> Any:
    """``SPATIAL_FAMILY_NAMES`` (the keys of :func:`spatial_families`), read from the
    declarations when asked (they import this module, so it cannot import them)."""
    if name == "SPATIAL_FAMILY_NAMES":
        return tuple(spatial_families())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RELATIVE_DIRECTIONS: tuple[str, ...] = ("front-left", "front-right", "back-left", "back-right")

MARKED_PREFIX = "object marked "
"""The name of an object no name is certain for: ``"object marked 3"``. Its case images carry the
number drawn on it (Set-of-Mark, ``shared/specs/evidence.md``); the number is its LiDAR object's,
the same in every frame of the recording."""


def marked_name(number: int) -> str:
    """The question's name for the object drawn with ``number`` (``"object marked 3"``)."""
    return f"{MARKED_PREFIX}{int(number)}"


def mark_number(name: str) -> int | None:
    """The mark ``name`` refers to (``"object marked 3"`` -> 3), None for a named object."""
    key = " ".join(str(name).split()).lower()
    if not key.startswith(MARKED_PREFIX):
        return None
    tail = key[len(MARKED_PREFIX):]
    return int(tail) if tail.isdigit() else None


class SpatialCase(BaseModel):
    """A public spatial case (a ``spatial_cases.jsonl`` line): what a model under test may see.

    ``images`` are asset paths relative to the dataset folder, in time order; a ``choice`` case
    has at least two distinct ``choices``, a ``number`` case has none and may state its ``unit``
    (``None`` for counts).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: NonEmptyString
    images: list[NonEmptyString] = Field(min_length=1)
    question: NonEmptyString
    answer_type: AnswerType
    choices: list[NonEmptyString] | None = None
    unit: Unit | None = None
    marks: str | None = Field(
        default=None, description="the style of the marks drawn on its images (Set-of-Mark, "
                                  "eval_assets.perception.marks.MarkStyle.name) when it asks "
                                  "about a marked object; None: plain frames")

    @model_validator(mode="after")
    def _shape(self) -> SpatialCase:
        if self.answer_type == "choice":
            if not self.choices or len(self.choices) < 2:
                raise ValueError("a 'choice' case needs at least two choices")
            distinct_choices(self.choices)
            if self.unit is not None:
                raise ValueError("a 'choice' case has no unit")
        elif self.choices is not None:
            raise ValueError("a 'number' case has no choices")
        return self


class SpatialPrivateLabel(BaseModel):
    """A ``spatial_labels.jsonl`` line: the case id and its answer (numbers as decimal strings)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: NonEmptyString
    answer: NonEmptyString


class SpatialLabel(BaseModel):
    """Everything private about one spatial case (``audit/spatial_labels.jsonl``).

    ``evidence["tracks"]`` has one entry per object named: ``{"name", "center_world": [x, y, z]}``
    in metres in the recording's TF world frame (the frame of the synthesizer's scene truth),
    besides whatever else the audit needs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    answer: str
    family: str
    answer_type: AnswerType
    unit: Unit | None = None
    choices: list[str] | None = None
    object_names: list[str]
    frame_index: int | None = None
    frame_indices: list[int] | None = None
    reference_frame: int | None = None
    evidence: dict[str, Any]

    @field_validator("family")
    @classmethod
    def _known_family(cls, family: str) -> str:
        known = tuple(spatial_families())
        if family not in known:
            raise ValueError(f"family {family!r} is not one of {known}")
        return family

    @model_validator(mode="after")
    def _has_frames_and_tracks(self) -> SpatialLabel:
        if self.frame_index is None and not self.frame_indices:
            raise ValueError("a spatial label names its frame_index or frame_indices")
        tracks = self.evidence.get("tracks")
        if not isinstance(tracks, list) or len(tracks) < len(set(self.object_names)):
            raise ValueError("evidence.tracks needs one entry per object named")
        return self

    def public(self) -> SpatialPrivateLabel:
        """The ``spatial_labels.jsonl`` line of this label."""
        return SpatialPrivateLabel(id=self.id, answer=self.answer)


class ObjectTrack(BaseModel):
    """One world-frame object fused from detections of one name across frames."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    track_id: str = Field(description="stable within a recording, e.g. 'red ball#0'")
    name: str
    center_world: list[float] = Field(min_length=3, max_length=3, description="metres")
    extent_m: list[float] = Field(min_length=3, max_length=3,
                                  description="oriented length, width, height (metres)")
    yaw_rad: float = Field(description="rotation of the extent's length axis about world z")
    frames: list[int] = Field(description="frame indices it was detected in, ascending")
    pixels: dict[int, int] = Field(description="mask pixels per frame index")
    points: int = Field(ge=0, description="LiDAR points fused into it")
    ranges_m: dict[int, float] = Field(
        default_factory=dict,
        description="median camera-to-visible-surface range (metres) per frame index: the "
                    "LiDAR's median in the mask, corrected by the fused box for the rows its "
                    "rings crossed (tracks.fuse.visible_surface_range)")
    whole_frames: list[int] = Field(
        default_factory=list,
        description="frames where the object was seen whole: its mask cut neither by the image "
                    "border nor by something in front of it (the name is decided there)")
    view_spread_deg: float = Field(
        default=0.0, ge=0.0, le=360.0,
        description="how far round the object (degrees of bearing about world z) its sightings "
                    "were taken from; its extent misses no side when this is wide enough "
                    "(tracks.fuse.COVERED_DEG)")
    footprint_seen: float = Field(
        default=0.0, ge=0.0, le=1.0,
        description="how completely its fused points show two adjacent sides of its footprint "
                    "rectangle (the L LiDAR sees of a box): the smaller of the shares of the "
                    "width and of the length the better-seen end and side span (tracks.fuse."
                    "sides_seen). At tracks.fuse.SIDE_SEEN_SHARE or more the length and width "
                    "are both measured however narrow the view spread; 0 for a single sighting")
    top_margin_m: float | None = Field(
        default=None, ge=0.0,
        description="how far above its measured top its true top may lie: over its top "
                    "returns, the highest of the lowest heights at which a LiDAR ray passed "
                    "over each and came back from beyond, less the measured top (eval_assets."
                    "objects.lidar.top_ceiling); None when some top return no ray passed over, "
                    "or not measured (tracks from detector masks)")
    source: Literal["detections", "lidar"] = Field(
        default="detections",
        description="where its extent comes from: its sightings' points (detector masks "
                    "lifted), or the LiDAR object's whole cloud over the recording (eval_assets."
                    "objects.lidar: every sweep that hit it, from many ranges and bearings)")
    outline_overhang: float | None = Field(
        default=None, ge=0.0,
        description="how far its masks stick out of its fitted box's image: the largest "
                    "overhang of a whole sighting's mask outline beyond the box's projected "
                    "outline, as a share of the mask's width or height (tracks.fuse."
                    "outline_overhang); more than a few percent means the LiDAR points missed "
                    "part of the object and the extent is short. None for a single sighting "
                    "or without a whole sighting with a camera")


class ObjectTracks(BaseModel):
    """The tracks asset's file: every object of one recording, and the detections left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    world_frame: str = Field(description="the recording's TF world frame id")
    tracks: list[ObjectTrack]
    skipped: list[dict[str, Any]] = Field(default_factory=list,
                                          description="detections not fused, each with a reason")
    cameras: dict[int, FrameCamera] = Field(
        default_factory=dict, description="per frame index with a pose: the rectified camera")
    floor_z: float | None = Field(
        default=None,
        description="the floor's height in the world frame (metres), from the LiDAR; None when "
                    "it was not measured (object_height_cm does not ask then)")
    trajectory: list[CameraSample] = Field(
        default_factory=list,
        description="the rectified camera's pose at every TF sample from just before the first "
                    "image to just after the last, in time order (the motion families' truth)")
    objects: LidarObjectsRecord | None = Field(
        default=None, description="the objects the LiDAR found and why each is named, marked "
                                  "or not asked about (None: tracks from detector masks)")


class CameraSample(BaseModel):
    """The camera at one TF sample: optical centre and heading (``shared/specs/motion.md``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    t: float = Field(description="the TF sample's stamp (epoch seconds)")
    position: list[float] = Field(min_length=3, max_length=3,
                                  description="optical centre in the world frame (metres)")
    yaw_deg: float = Field(description="heading: yaw of the optical axis on the floor plane "
                                       "(world z up), counter-clockwise, in (-180, 180]")


class FrameCamera(BaseModel):
    """One frame's rectified pinhole camera and its pose in the world frame."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    world_from_camera: list[float] = Field(min_length=16, max_length=16,
                                           description="row-major 4x4, rectified camera -> world")
    K: list[float] = Field(min_length=9, max_length=9, description="row-major 3x3 (K_rect)")
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    image_ts: float
