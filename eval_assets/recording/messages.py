"""Typed records for the messages a dimOS recording carries.

These mirror the ROS ``sensor_msgs`` / ``tf2_msgs`` definitions that dimOS encodes with LCM. They
are plain frozen dataclasses so that the codec, the synthesizer and the frame pipeline share one
schema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def _freeze(obj: object, name: str, value: object) -> None:
    # Frozen dataclasses normalise their inputs through object.__setattr__ in __post_init__.
    object.__setattr__(obj, name, value)


def _floats(values: object) -> tuple[float, ...]:
    return tuple(float(v) for v in values)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Header:
    """``std_msgs/Header``: sequence number, stamp as (sec, nsec), frame id."""

    seq: int = 0
    stamp_sec: int = 0
    stamp_nsec: int = 0
    frame_id: str = ""

    @property
    def stamp(self) -> float:
        """The stamp in epoch seconds."""
        return self.stamp_sec + self.stamp_nsec * 1e-9

    @classmethod
    def at(cls, t: float, frame_id: str, seq: int = 0) -> Header:
        """A header stamped at epoch seconds ``t`` (nanosecond resolution, floor-split)."""
        ns = round(t * 1e9)
        return cls(
            seq=seq, stamp_sec=ns // 1_000_000_000, stamp_nsec=ns % 1_000_000_000, frame_id=frame_id
        )


@dataclass(frozen=True)
class Image:
    """``sensor_msgs/Image``. Codec ``jpeg``: ``encoding`` is ``"jpeg"``, ``data`` a JPEG."""

    header: Header
    height: int
    width: int
    encoding: str
    is_bigendian: int
    step: int
    data: bytes

    def __post_init__(self) -> None:
        # bytearray / memoryview / numpy buffers become bytes so equality and hashing work.
        _freeze(self, "data", bytes(self.data))


@dataclass(frozen=True)
class RegionOfInterest:
    """``sensor_msgs/RegionOfInterest``."""

    x_offset: int = 0
    y_offset: int = 0
    height: int = 0
    width: int = 0
    do_rectify: bool = False


@dataclass(frozen=True)
class CameraInfo:
    """``sensor_msgs/CameraInfo``. ``D`` length depends on the model; K, R, P are row-major."""

    header: Header
    height: int
    width: int
    distortion_model: str
    D: tuple[float, ...]
    K: tuple[float, ...]  # 9
    R: tuple[float, ...]  # 9; all zeros means identity
    P: tuple[float, ...]  # 12
    binning_x: int = 0
    binning_y: int = 0
    roi: RegionOfInterest = field(default_factory=RegionOfInterest)

    def __post_init__(self) -> None:
        # Lists and numpy arrays become float tuples so decoded and constructed messages compare
        # equal and the dataclass stays hashable.
        for name in ("D", "K", "R", "P"):
            _freeze(self, name, _floats(getattr(self, name)))


@dataclass(frozen=True)
class PointField:
    """``sensor_msgs/PointField``. ``datatype`` 7 is FLOAT32."""

    name: str
    offset: int
    datatype: int
    count: int = 1


FLOAT32 = 7


@dataclass(frozen=True)
class PointCloud2:
    """``sensor_msgs/PointCloud2``; ``data`` is the raw point buffer laid out by ``fields``."""

    header: Header
    height: int
    width: int
    fields: tuple[PointField, ...]
    is_bigendian: bool
    point_step: int
    row_step: int
    data: bytes
    is_dense: bool

    def __post_init__(self) -> None:
        _freeze(self, "fields", tuple(self.fields))
        _freeze(self, "data", bytes(self.data))

    def field_array(self, name: str) -> np.ndarray:
        """One FLOAT32 field of every point as a float32 array, honouring ``point_step``."""
        spec = next((f for f in self.fields if f.name == name), None)
        if spec is None:
            names = [f.name for f in self.fields]
            raise KeyError(f"PointCloud2 has no field {name!r}; fields: {names}")
        if spec.datatype != FLOAT32:
            raise ValueError(
                f"PointCloud2 field {name!r} has datatype {spec.datatype}, expected 7 (FLOAT32)"
            )
        n = self.width * self.height
        if len(self.data) < n * self.point_step or spec.offset + 4 > self.point_step:
            raise ValueError(
                f"PointCloud2 data holds {len(self.data)} bytes, fewer than "
                f"width*height*point_step = {n * self.point_step}, or field {name!r} lies past "
                "point_step"
            )
        dtype = np.dtype(">f4" if self.is_bigendian else "<f4")
        rows = np.frombuffer(self.data, dtype=np.uint8, count=n * self.point_step)
        cols = rows.reshape(n, self.point_step)[:, spec.offset : spec.offset + 4]
        return np.ascontiguousarray(cols).view(dtype).reshape(n).astype(np.float32)

    def xyz(self) -> np.ndarray:
        """Points as an ``(N, 3)`` float32 array in ``header.frame_id``."""
        return np.stack([self.field_array(a) for a in ("x", "y", "z")], axis=1)


@dataclass(frozen=True)
class Transform:
    """Translation (metres) and unit quaternion (x, y, z, w)."""

    translation: tuple[float, float, float]
    rotation: tuple[float, float, float, float]

    def __post_init__(self) -> None:
        _freeze(self, "translation", _floats(self.translation))
        _freeze(self, "rotation", _floats(self.rotation))

    def matrix(self) -> np.ndarray:
        """The 4×4 homogeneous matrix mapping child-frame points into the parent frame."""
        x, y, z, w = self.rotation
        norm = math.sqrt(x * x + y * y + z * z + w * w)
        if norm == 0.0:
            raise ValueError("transform has a zero quaternion")
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
        m = np.eye(4)
        m[:3, :3] = [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
        m[:3, 3] = self.translation
        return m


@dataclass(frozen=True)
class TransformStamped:
    """``geometry_msgs/TransformStamped``: ``header.frame_id`` parent, ``child_frame_id`` child."""

    header: Header
    child_frame_id: str
    transform: Transform


@dataclass(frozen=True)
class TFMessage:
    """``tf2_msgs/TFMessage``."""

    transforms: tuple[TransformStamped, ...]

    def __post_init__(self) -> None:
        _freeze(self, "transforms", tuple(self.transforms))


Message = Image | CameraInfo | PointCloud2 | TFMessage
