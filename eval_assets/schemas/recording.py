"""The validated inventory of a recording, as stored by the ingest stage."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StreamInventory(BaseModel):
    """One stream of a recording: its message type, codec, size and time span."""

    model_config = ConfigDict(frozen=True)

    name: str
    payload_module: str
    codec_id: str
    count: int
    t_start: float | None
    t_end: float | None


class RecordingInventory(BaseModel):
    """What ingest found in a recording after validating it."""

    model_config = ConfigDict(frozen=True)

    recording: str
    path: str
    sha256: str
    size_bytes: int
    lidar_stream: str
    streams: list[StreamInventory]
    image_count: int
    t_start: float
    t_end: float

    @property
    def duration_s(self) -> float:
        """Seconds between the first and last colour image."""
        return self.t_end - self.t_start
