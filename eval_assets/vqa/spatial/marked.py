"""Cases about marked objects: their images published with the marks drawn (Set-of-Mark).

An object no name is certain for is asked about as "the object marked 3"
(:func:`~eval_assets.schemas.spatial.marked_name`). Every image of such a case is the frame with
the number of every marked object drawn on it (:func:`~eval_assets.perception.marks.draw_marks`,
from the frame's object-number image the tracks stage wrote), the same number for the same object
in every frame; the case records the mark style. Named objects are not drawn: their cases show the
plain frame, and a mark never covers what a name question is about.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from eval_assets.atomic import write_bytes_atomic
from eval_assets.frames import read_rectified_frames
from eval_assets.perception.marks import DEFAULT_MARK_STYLE, MarkStyle, draw_marks
from eval_assets.schemas.objects import marks_relpath
from eval_assets.schemas.spatial import ObjectTracks, SpatialCase, SpatialLabel, mark_number
from eval_assets.schemas.vqa import asset_relpath, frame_stem, marked_asset_relpath

_PNG = [cv2.IMWRITE_PNG_COMPRESSION, 3]


@dataclass(frozen=True)
class MarkSource:
    """Where a dataset's marked images are drawn from: the rectified frames and the tracks
    folder (its ``marks/`` object-number images), and the style to draw them in."""

    frames_dir: Path
    tracks_dir: Path
    style: MarkStyle = DEFAULT_MARK_STYLE


def is_marked(label: SpatialLabel) -> bool:
    """Whether the case asks about a marked object."""
    return any(mark_number(n) is not None for n in label.object_names)


def marked_numbers(tracks: ObjectTracks) -> frozenset[int]:
    """The numbers of the marked objects among ``tracks`` (those drawn on marked images)."""
    return frozenset(n for t in tracks.tracks if (n := mark_number(t.name)) is not None)


def with_marks(case: SpatialCase, label: SpatialLabel, style: MarkStyle
               ) -> tuple[SpatialCase, SpatialLabel]:
    """The case showing the marked frames instead of the plain ones, the style recorded."""
    frames = label.frame_indices or ([label.frame_index] if label.frame_index is not None
                                     else [])
    plain = {asset_relpath(f): marked_asset_relpath(f) for f in frames}
    images = [plain.get(image, image) for image in case.images]
    return (case.model_copy(update={"images": images, "marks": style.name}),
            label.model_copy(update={"evidence": {**label.evidence,
                                                  "marks": style.record()}}))


def marked_images(cases: Iterable[SpatialCase]) -> list[int]:
    """The frames whose marked image some case shows, ascending."""
    wanted = {image for case in cases if case.marks for image in case.images}
    return sorted(int(Path(image).stem.rsplit("-", 1)[1]) for image in wanted)


def write_marked_images(root: Path, frames: Sequence[int], numbers: frozenset[int],
                        source: MarkSource) -> None:
    """Draw each of ``frames`` with the marked objects' ``numbers`` into the dataset folder
    ``root`` (:func:`~eval_assets.schemas.vqa.marked_asset_relpath`). A frame without its
    object-number image is an error naming the file (the tracks were built without it)."""
    if not frames:
        return
    records = {f.frame_index: f for f in read_rectified_frames(source.frames_dir)}
    for index in frames:
        labels_path = Path(source.tracks_dir) / marks_relpath(index)
        labels = cv2.imread(str(labels_path), cv2.IMREAD_UNCHANGED)
        if labels is None or index not in records:
            raise FileNotFoundError(
                f"{labels_path} (the object numbers of {frame_stem(index)}) is missing or "
                "unreadable; rematerialize object_tracks for this recording")
        bgr = cv2.imread(str(Path(source.frames_dir) / records[index].image_path),
                         cv2.IMREAD_COLOR)
        if bgr is None:
            raise FileNotFoundError(f"{records[index].image_path} is missing in "
                                    f"{source.frames_dir}; rebuild the rectified frames")
        present = {int(v) for v in np.unique(labels) if int(v) in numbers}
        drawn = draw_marks(np.ascontiguousarray(bgr[:, :, ::-1]), labels.astype(np.int32),
                           {n: n for n in sorted(present)}, source.style)
        ok, buf = cv2.imencode(".png", np.ascontiguousarray(drawn[:, :, ::-1]), _PNG)
        if not ok:
            raise ValueError(f"PNG encoding failed for the marked {frame_stem(index)}")
        write_bytes_atomic(Path(root) / marked_asset_relpath(index), buf.tobytes())
