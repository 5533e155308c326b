"""The objects the LiDAR found in one recording (the ``objects`` field of the tracks file), and
why each is or is not asked about and named (``shared/specs/evidence.md``), and where each
frame's object numbers are stored (``marks/`` beside the tracks file)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MARKS_DIR = "marks"


def marks_relpath(frame_index: int) -> str:
    """A frame's object-number image (uint16 PNG, 0 = no object), relative to the tracks
    folder."""
    return f"{MARKS_DIR}/frame-{frame_index:06d}.png"


class LidarObjectRecord(BaseModel):
    """One object the LiDAR found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: int = Field(ge=1, description="its mark: the same in every frame of the recording")
    center_world: list[float] = Field(min_length=3, max_length=3)
    footprint_m: list[float] = Field(min_length=2, max_length=2,
                                     description="floor-plan extent along the grid (metres)")
    height_m: float = Field(description="its top above the floor (metres)")
    points: int = Field(ge=0, description="LiDAR returns over the recording")
    frames: list[int] = Field(description="frames whose sweep hit it")
    view_spread_deg: float = Field(
        default=0.0, description="degrees of bearing round it that those sweeps were taken from")
    askable: bool = Field(description="asked about (not structure, enough points and frames)")
    reason: str = Field(default="", description="why it is not asked about")
    name: str | None = Field(default=None, description="its certain name; None: marked")
    name_reason: str = Field(default="", description="why it has that name or none")
    name_votes: dict[str, int] = Field(default_factory=dict)
    clean_frames: int = Field(default=0, description="frames seen clean enough to name it")
    occluded_share: dict[int, float] = Field(
        default_factory=dict, description="per frame: share of its silhouette hidden by a "
                                          "nearer object")


class LidarObjectsRecord(BaseModel):
    """The ``objects.json`` file: the floor, the objects, how marks are drawn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    floor_z: float | None = Field(description="the floor's height in the world frame (metres)")
    objects: list[LidarObjectRecord]
    references: str | None = Field(
        default=None, description="fingerprint of the taught reference images used, if any")
