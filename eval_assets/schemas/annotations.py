"""Human annotations of a recording's frames (``data/annotations/<recording>.jsonl``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.jsonio import read_jsonl


class FrameAnnotation(BaseModel):
    """What a person saw in one rectified frame: the free-text and object ground truth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0)
    description: str = Field(min_length=1)
    objects: list[str] = Field(default_factory=list)
    coco_objects: list[str] = Field(default_factory=list)


def read_annotations(path: Path) -> dict[int, FrameAnnotation]:
    """Annotations by frame index; a repeated frame index is an error naming the file."""
    rows = read_jsonl(path, FrameAnnotation, fix="correct that line (one annotation per line)")
    by_frame: dict[int, FrameAnnotation] = {}
    for row in rows:
        if row.frame_index in by_frame:
            raise ValueError(f"{path}: frame_index {row.frame_index} is annotated twice; "
                             "keep one line per frame")
        by_frame[row.frame_index] = row
    return dict(sorted(by_frame.items()))
