"""Full validation of a recording: every row of every required stream, not only the first.

``Recording.open`` checks the file's structure (SQLite integrity, streams, codecs) and the first
message of each stream, which is enough to start reading. Before a recording becomes a Dagster
partition it must pass this deeper scan, so that a file whose 17th image is truncated is refused
at the door with the row named, instead of becoming a partition whose every run fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from eval_assets import progress
from eval_assets.recording.errors import RecordingError
from eval_assets.recording.inventory import inventory_of
from eval_assets.recording.messages import Image
from eval_assets.recording.reader import Recording
from eval_assets.schemas.recording import RecordingInventory


@dataclass(frozen=True)
class ValidatedRecording:
    """A recording that passed the full scan, with its inventory (content hash included)."""

    path: Path
    inventory: RecordingInventory


def _check_image(rec: Recording, index: int, image: Image) -> None:
    if image.encoding != "jpeg":
        return  # raw encodings were size-checked by the LCM decoder
    # A reduced greyscale decode proves the JPEG is whole at a fraction of a full decode's cost.
    pixels = cv2.imdecode(np.frombuffer(image.data, np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_8)
    if pixels is None:
        raise RecordingError(
            f"{rec.path}: stream 'color_image' frame {index}: image data ({len(image.data)} "
            "bytes) is not a decodable JPEG. Fix: the recording is truncated or corrupt; copy "
            "or re-record it.",
            path=rec.path, stream="color_image")


def validate_recording(path: Path, *, allow_pickle: bool = False,
                       name: str | None = None) -> ValidatedRecording:
    """Open ``path`` and decode every message of the required streams; raise on the first bad one.

    Raises :class:`RecordingError` naming the file, the stream, the row and the fix.
    """
    path = Path(path)
    with Recording.open(path, allow_pickle=allow_pickle) as rec:
        streams = ("camera_info", "tf", rec.lidar_stream, "color_image")
        total = sum(rec.streams[s].count for s in streams)
        with progress.task(f"validating {path.name}", total=total) as advance:
            for stream in streams:
                for index, (_, message) in enumerate(rec.iter_messages(stream)):
                    if stream == "color_image":
                        _check_image(rec, index, message)
                    advance(1)
        inventory = inventory_of(rec, name or path.stem)
    return ValidatedRecording(path=path, inventory=inventory)
