"""Summarise a validated recording: streams, counts, time span and content hash."""

from __future__ import annotations

from eval_assets.recording.names import IMAGE_STREAM
from eval_assets.recording.reader import Recording
from eval_assets.schemas.recording import RecordingInventory, StreamInventory


def inventory_of(recording: Recording, name: str) -> RecordingInventory:
    """The inventory of an opened (hence validated) recording, streams sorted by name."""
    streams = [
        StreamInventory(
            name=info.name,
            payload_module=info.payload_module,
            codec_id=info.codec_id,
            count=info.count,
            t_start=info.t_start,
            t_end=info.t_end,
        )
        for info in sorted(recording.streams.values(), key=lambda s: s.name)
    ]
    images = recording.streams[IMAGE_STREAM]
    # The reader refuses a recording whose color_image is empty, so an opened one has its span.
    assert images.t_start is not None and images.t_end is not None
    return RecordingInventory(
        recording=name,
        path=str(recording.path),
        sha256=recording.sha256,
        size_bytes=recording.path.stat().st_size,
        lidar_stream=recording.lidar_stream,
        streams=streams,
        image_count=images.count,
        t_start=float(images.t_start),
        t_end=float(images.t_end),
    )
