"""Human annotations of a recording's frames (``data/annotations/<recording>.jsonl``).

An annotation describes an image, so it is keyed by that image's content: ``image_sha256``, the
SHA-256 of the frame's PNG file as the pipeline publishes it (``assets/frame-NNNNNN.png`` of the
recording's dataset, the bytes a model is sent). ``frame_index`` says where the frame was when it
was annotated, for people; it is never used to attach the annotation. When the recording is
replaced, an annotation whose image is no longer among its frames is reported, never attached to
another image (:func:`eval_assets.scoring.inputs.load_annotations`).

Files written before annotations carried ``image_sha256`` are refused with the fix:
``eval-assets labels migrate-annotations --recording R`` adds the hashes of the current frames,
once, after a person has checked those are the frames that were annotated.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.errors import InputError
from eval_assets.jsonio import read_jsonl

MIGRATE = "eval-assets labels migrate-annotations --recording {recording}"


class FrameAnnotation(BaseModel):
    """What a person saw in one rectified frame: the free-text and object ground truth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0, description="where the frame was when annotated (for people)")
    image_sha256: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 of the annotated frame's PNG file: what the annotation is keyed by")
    description: str = Field(min_length=1)
    objects: list[str] = Field(default_factory=list)
    coco_objects: list[str] = Field(default_factory=list)


def read_annotation_rows(path: Path) -> list[FrameAnnotation]:
    """Every line of an annotations file, as written (old lines may lack ``image_sha256``)."""
    return read_jsonl(path, FrameAnnotation, fix="correct that line (one annotation per line)")


def read_annotations(path: Path) -> dict[str, FrameAnnotation]:
    """Annotations by image hash.

    An :class:`InputError` names the file and the fix when a line has no ``image_sha256`` (a file
    keyed by frame index, from before) or when one image is annotated twice.
    """
    path = Path(path)
    by_image: dict[str, FrameAnnotation] = {}
    for number, row in enumerate(read_annotation_rows(path), start=1):
        if row.image_sha256 is None:
            recording = path.name.removesuffix(".jsonl")
            raise InputError(
                f"{path}: annotation {number} (frame_index {row.frame_index}) has no "
                "image_sha256. Annotations are keyed by the frame's image, not its index, so "
                "that a replaced recording never gets another image's annotation. Fix: check "
                "that the recording's current frames are the ones annotated, then run "
                f"`{MIGRATE.format(recording=recording)}` once")
        if row.image_sha256 in by_image:
            raise InputError(f"{path}: the image {row.image_sha256[:12]}… (frame_index "
                             f"{row.frame_index}) is annotated twice; keep one line per image")
        by_image[row.image_sha256] = row
    return by_image
