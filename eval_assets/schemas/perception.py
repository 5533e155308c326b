"""Perception evidence records: what a detector found for each queried name, and its masks.

Every detection kept as evidence names the detector and segmenter (and their versions) that
produced it, so an audit can tell which model decided an answer. The stored table and mask files
are laid out by :mod:`eval_assets.perception.evidence_io`.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Detection(BaseModel):
    """One detected instance of a queried name, with its segmentation mask's summary.

    ``box_xyxy`` is in rectified-image pixels with pixel *edges* as coordinates: a box covering
    columns ``0..9`` and rows ``0..4`` is ``(0, 0, 10, 5)``. ``label_index`` is the position of
    ``name`` in the frame's ``queried_names``. ``mask_path`` is relative to the detections folder
    and ``None`` until the mask is written.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="the queried object name, e.g. 'red ball'")
    label_index: int = Field(ge=0, description="index of name in the frame's queried_names")
    box_xyxy: tuple[float, float, float, float] = Field(description="pixel edges x0, y0, x1, y1")
    score: float = Field(ge=0.0, le=1.0, description="detector confidence")
    mask_area: int = Field(ge=0, description="pixels in the segmentation mask")
    mask_path: str | None = Field(description="mask PNG relative to the detections folder")
    detector: str
    detector_version: str
    segmenter: str
    segmenter_version: str

    @model_validator(mode="after")
    def _box_is_ordered(self) -> Self:
        x0, y0, x1, y1 = self.box_xyxy
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f"box_xyxy {self.box_xyxy} must have x0 < x1 and y0 < y1")
        return self


class FrameDetections(BaseModel):
    """Everything queried and found in one rectified frame (names without hits included)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0)
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    queried_names: list[str] = Field(description="every name asked, in query order")
    detections: list[Detection] = Field(description="ordered by label_index, then detector order")
    unsure_names: list[str] = Field(
        default_factory=list,
        description="queried names (query order) with a region the detector saw but could not "
                    "name with confidence: such a name may be present even without a detection")

    @model_validator(mode="after")
    def _labels_match_queries(self) -> Self:
        unknown = [n for n in self.unsure_names if n not in self.queried_names]
        if unknown:
            raise ValueError(f"frame {self.frame_index}: unsure_names {unknown} were not queried")
        for d in self.detections:
            if d.label_index >= len(self.queried_names) or \
                    self.queried_names[d.label_index] != d.name:
                raise ValueError(
                    f"frame {self.frame_index}: detection {d.name!r} has label_index "
                    f"{d.label_index}, which does not point at that name in queried_names"
                )
        return self

    def detections_of(self, name: str) -> list[Detection]:
        """The detections of one queried name (empty when it was queried and not found)."""
        return [d for d in self.detections if d.name == name]
