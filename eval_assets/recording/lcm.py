"""LCM encoding of the four message types a recording carries, without the ``lcm`` package.

LCM is big-endian; an 8-byte fingerprint precedes the top-level message only; strings are a
uint32 length (including the trailing NUL), the UTF-8 bytes and a NUL; variable arrays take their
length from an ``int32`` ``*_length`` member. In the dimos-lcm ports of the ROS messages those
length members come FIRST in the struct, not next to their array. The member lists below are the
exact dimos-lcm 0.1.2 definitions: the fingerprints computed from them with lcm-gen's hash equal the
ones dimOS writes (``FINGERPRINTS``), which pins every member's name, type and position.

    sensor_msgs.Image       data_length, header, height, width, encoding, is_bigendian(byte),
                            step, data[data_length]
    sensor_msgs.CameraInfo  D_length, header, height, width, distortion_model, D[D_length], K[9],
                            R[9], P[12], binning_x, binning_y, roi
    sensor_msgs.PointCloud2 fields_length, data_length, header, height, width,
                            fields[fields_length], is_bigendian(boolean), point_step, row_step,
                            data[data_length], is_dense(boolean)
    tf2_msgs.TFMessage      transforms_length, transforms[transforms_length]

Every read is bounds-checked, so a truncated or corrupt blob raises ``LcmDecodeError`` instead of
returning a short message.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from eval_assets.recording.errors import LcmDecodeError, LcmFingerprintError
from eval_assets.recording.messages import (
    CameraInfo,
    Header,
    Image,
    PointCloud2,
    PointField,
    RegionOfInterest,
    TFMessage,
    Transform,
    TransformStamped,
)

# --- lcm-gen's type hash ------------------------------------------------------------------------

_PRIMITIVES = frozenset(
    {"int8_t", "int16_t", "int32_t", "int64_t", "byte", "float", "double", "string", "boolean"}
)
_Member = tuple[str, str, tuple[int | str, ...]]

# name -> members in wire order: (member name, LCM type, array dimensions; int = fixed, str = the
# member holding the length).
LCM_STRUCTS: dict[str, tuple[_Member, ...]] = {
    "std_msgs.Time": (("sec", "int32_t", ()), ("nsec", "int32_t", ())),
    "std_msgs.Header": (
        ("seq", "int32_t", ()),
        ("stamp", "std_msgs.Time", ()),
        ("frame_id", "string", ()),
    ),
    "sensor_msgs.Image": (
        ("data_length", "int32_t", ()),
        ("header", "std_msgs.Header", ()),
        ("height", "int32_t", ()),
        ("width", "int32_t", ()),
        ("encoding", "string", ()),
        ("is_bigendian", "byte", ()),
        ("step", "int32_t", ()),
        ("data", "byte", ("data_length",)),
    ),
    "sensor_msgs.RegionOfInterest": (
        ("x_offset", "int32_t", ()),
        ("y_offset", "int32_t", ()),
        ("height", "int32_t", ()),
        ("width", "int32_t", ()),
        ("do_rectify", "boolean", ()),
    ),
    "sensor_msgs.CameraInfo": (
        ("D_length", "int32_t", ()),
        ("header", "std_msgs.Header", ()),
        ("height", "int32_t", ()),
        ("width", "int32_t", ()),
        ("distortion_model", "string", ()),
        ("D", "double", ("D_length",)),
        ("K", "double", (9,)),
        ("R", "double", (9,)),
        ("P", "double", (12,)),
        ("binning_x", "int32_t", ()),
        ("binning_y", "int32_t", ()),
        ("roi", "sensor_msgs.RegionOfInterest", ()),
    ),
    "sensor_msgs.PointField": (
        ("name", "string", ()),
        ("offset", "int32_t", ()),
        ("datatype", "byte", ()),
        ("count", "int32_t", ()),
    ),
    "sensor_msgs.PointCloud2": (
        ("fields_length", "int32_t", ()),
        ("data_length", "int32_t", ()),
        ("header", "std_msgs.Header", ()),
        ("height", "int32_t", ()),
        ("width", "int32_t", ()),
        ("fields", "sensor_msgs.PointField", ("fields_length",)),
        ("is_bigendian", "boolean", ()),
        ("point_step", "int32_t", ()),
        ("row_step", "int32_t", ()),
        ("data", "byte", ("data_length",)),
        ("is_dense", "boolean", ()),
    ),
    "geometry_msgs.Vector3": (("x", "double", ()), ("y", "double", ()), ("z", "double", ())),
    "geometry_msgs.Quaternion": (
        ("x", "double", ()),
        ("y", "double", ()),
        ("z", "double", ()),
        ("w", "double", ()),
    ),
    "geometry_msgs.Transform": (
        ("translation", "geometry_msgs.Vector3", ()),
        ("rotation", "geometry_msgs.Quaternion", ()),
    ),
    "geometry_msgs.TransformStamped": (
        ("header", "std_msgs.Header", ()),
        ("child_frame_id", "string", ()),
        ("transform", "geometry_msgs.Transform", ()),
    ),
    "tf2_msgs.TFMessage": (
        ("transforms_length", "int32_t", ()),
        ("transforms", "geometry_msgs.TransformStamped", ("transforms_length",)),
    ),
}

_MASK = (1 << 64) - 1


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _hash_update(v: int, c: int) -> int:
    # lcm-gen works on a signed int64 with an arithmetic shift and a signed char.
    v = _signed(v)
    c = c - 256 if c > 127 else c
    return _signed(((v << 8) ^ (v >> 55)) + c)


def _hash_string(v: int, s: str) -> int:
    v = _hash_update(v, len(s))
    for ch in s.encode("utf-8"):
        v = _hash_update(v, ch)
    return v


def struct_base_hash(members: Sequence[_Member]) -> int:
    """lcm-gen's hash of one struct's own members (names, primitive types, dimensions)."""
    v = 0x12345678
    for name, lcm_type, dims in members:
        v = _hash_string(v, name)
        if lcm_type in _PRIMITIVES:
            v = _hash_string(v, lcm_type)
        v = _hash_update(v, len(dims))
        for dim in dims:
            v = _hash_update(v, 0 if isinstance(dim, int) else 1)  # LCM_CONST / LCM_VAR
            v = _hash_string(v, str(dim))
    return v & _MASK


def struct_fingerprint(name: str, parents: tuple[str, ...] = ()) -> int:
    """The recursive fingerprint of struct ``name`` in ``LCM_STRUCTS``, as lcm-gen computes it."""
    if name in parents:
        return 0
    members = LCM_STRUCTS[name]
    total = struct_base_hash(members)
    for _, lcm_type, _ in members:
        if lcm_type not in _PRIMITIVES:
            total += struct_fingerprint(lcm_type, (*parents, name))
    total &= _MASK
    return ((total << 1) & _MASK) + (total >> 63)


_TOP_LEVEL: dict[type, str] = {
    Image: "sensor_msgs.Image",
    CameraInfo: "sensor_msgs.CameraInfo",
    PointCloud2: "sensor_msgs.PointCloud2",
    TFMessage: "tf2_msgs.TFMessage",
}

FINGERPRINTS: dict[type, bytes] = {
    cls: struct.pack(">Q", struct_fingerprint(name)) for cls, name in _TOP_LEVEL.items()
}
"""Message class -> the 8 fingerprint bytes that precede its LCM encoding."""

LCM_TYPE_NAMES: dict[type, str] = dict(_TOP_LEVEL)
"""Message class -> LCM type name (``sensor_msgs.Image`` ...)."""


# --- encoding -----------------------------------------------------------------------------------


class _Out:
    """Accumulates big-endian fields; range errors name the field."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def _pack(self, fmt: str, value: Any, what: str) -> None:
        try:
            self._parts.append(struct.pack(fmt, value))
        except struct.error as exc:
            raise ValueError(f"LCM field {what}={value!r} does not fit {fmt[1:]}: {exc}") from None

    def i32(self, value: int, what: str) -> None:
        self._pack(">i", int(value), what)

    def u32(self, value: int, what: str) -> None:
        self._pack(">I", int(value), what)

    def byte(self, value: int, what: str) -> None:
        self._pack(">B", int(value), what)

    def boolean(self, value: bool) -> None:
        self._parts.append(b"\x01" if value else b"\x00")

    def f64(self, value: float, what: str) -> None:
        self._pack(">d", float(value), what)

    def f64s(self, values: Sequence[float], n: int, what: str) -> None:
        if len(values) != n:
            raise ValueError(f"LCM field {what} needs {n} values, got {len(values)}")
        self._parts.append(struct.pack(f">{n}d", *(float(v) for v in values)))

    def string(self, value: str, what: str) -> None:
        raw = value.encode("utf-8")
        if b"\x00" in raw:
            raise ValueError(f"LCM string {what}={value!r} contains a NUL byte")
        self.u32(len(raw) + 1, what)
        self._parts.append(raw + b"\x00")

    def raw(self, value: bytes) -> None:
        self._parts.append(bytes(value))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def _enc_header(out: _Out, h: Header, what: str) -> None:
    out.i32(h.seq, f"{what}.seq")
    out.i32(h.stamp_sec, f"{what}.stamp.sec")
    out.i32(h.stamp_nsec, f"{what}.stamp.nsec")
    out.string(h.frame_id, f"{what}.frame_id")


def _enc_image(out: _Out, m: Image) -> None:
    out.i32(len(m.data), "data_length")
    _enc_header(out, m.header, "header")
    out.i32(m.height, "height")
    out.i32(m.width, "width")
    out.string(m.encoding, "encoding")
    out.byte(m.is_bigendian, "is_bigendian")
    out.i32(m.step, "step")
    out.raw(m.data)


def _enc_camera_info(out: _Out, m: CameraInfo) -> None:
    out.i32(len(m.D), "D_length")
    _enc_header(out, m.header, "header")
    out.i32(m.height, "height")
    out.i32(m.width, "width")
    out.string(m.distortion_model, "distortion_model")
    out.f64s(m.D, len(m.D), "D")
    out.f64s(m.K, 9, "K")
    out.f64s(m.R, 9, "R")
    out.f64s(m.P, 12, "P")
    out.i32(m.binning_x, "binning_x")
    out.i32(m.binning_y, "binning_y")
    out.i32(m.roi.x_offset, "roi.x_offset")
    out.i32(m.roi.y_offset, "roi.y_offset")
    out.i32(m.roi.height, "roi.height")
    out.i32(m.roi.width, "roi.width")
    out.boolean(m.roi.do_rectify)


def _enc_point_cloud(out: _Out, m: PointCloud2) -> None:
    out.i32(len(m.fields), "fields_length")
    out.i32(len(m.data), "data_length")
    _enc_header(out, m.header, "header")
    out.i32(m.height, "height")
    out.i32(m.width, "width")
    for i, f in enumerate(m.fields):
        out.string(f.name, f"fields[{i}].name")
        out.i32(f.offset, f"fields[{i}].offset")
        out.byte(f.datatype, f"fields[{i}].datatype")
        out.i32(f.count, f"fields[{i}].count")
    out.boolean(m.is_bigendian)
    out.i32(m.point_step, "point_step")
    out.i32(m.row_step, "row_step")
    out.raw(m.data)
    out.boolean(m.is_dense)


def _enc_tf(out: _Out, m: TFMessage) -> None:
    out.i32(len(m.transforms), "transforms_length")
    for i, t in enumerate(m.transforms):
        what = f"transforms[{i}]"
        _enc_header(out, t.header, f"{what}.header")
        out.string(t.child_frame_id, f"{what}.child_frame_id")
        out.f64s(t.transform.translation, 3, f"{what}.transform.translation")
        out.f64s(t.transform.rotation, 4, f"{what}.transform.rotation")


_ENCODERS: dict[type, Callable[[_Out, Any], None]] = {
    Image: _enc_image,
    CameraInfo: _enc_camera_info,
    PointCloud2: _enc_point_cloud,
    TFMessage: _enc_tf,
}


def encode_lcm(message: Image | CameraInfo | PointCloud2 | TFMessage) -> bytes:
    """The LCM bytes of ``message``: its type's fingerprint, then its members in wire order."""
    encoder = _ENCODERS.get(type(message))
    if encoder is None:
        raise TypeError(
            f"encode_lcm cannot encode {type(message).__name__}; "
            f"supported: {', '.join(c.__name__ for c in _ENCODERS)}"
        )
    out = _Out()
    out.raw(FINGERPRINTS[type(message)])
    encoder(out, message)
    return out.getvalue()


# --- decoding -----------------------------------------------------------------------------------


class _In:
    """A cursor over LCM bytes; every read checks that enough bytes remain."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self._buf = bytes(data)
        self._pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0:
            raise LcmDecodeError(f"{what}: negative length {n}")
        end = self._pos + n
        if end > len(self._buf):
            raise LcmDecodeError(
                f"truncated: {what} needs {n} bytes at offset {self._pos}, "
                f"only {len(self._buf) - self._pos} left of {len(self._buf)}"
            )
        chunk = self._buf[self._pos : end]
        self._pos = end
        return chunk

    def i32(self, what: str) -> int:
        return int(struct.unpack(">i", self.take(4, what))[0])

    def length(self, what: str) -> int:
        n = self.i32(what)
        if n < 0:
            raise LcmDecodeError(f"{what} is negative ({n})")
        return n

    def byte(self, what: str) -> int:
        return self.take(1, what)[0]

    def boolean(self, what: str) -> bool:
        return self.take(1, what)[0] != 0

    def f64s(self, n: int, what: str) -> tuple[float, ...]:
        return tuple(struct.unpack(f">{n}d", self.take(8 * n, what)))

    def string(self, what: str) -> str:
        n = int(struct.unpack(">I", self.take(4, f"{what} length"))[0])
        if n == 0:
            raise LcmDecodeError(f"{what}: string length 0 (LCM strings include their NUL)")
        raw = self.take(n, what)
        if raw[-1] != 0:
            raise LcmDecodeError(f"{what}: string is not NUL-terminated")
        return raw[:-1].decode("utf-8", "replace")

    def finish(self, what: str) -> None:
        left = len(self._buf) - self._pos
        if left:
            raise LcmDecodeError(f"{what}: {left} unexpected bytes after the message")


def _dec_header(inp: _In, what: str) -> Header:
    seq = inp.i32(f"{what}.seq")
    sec = inp.i32(f"{what}.stamp.sec")
    nsec = inp.i32(f"{what}.stamp.nsec")
    return Header(seq=seq, stamp_sec=sec, stamp_nsec=nsec, frame_id=inp.string(f"{what}.frame_id"))


def _dec_image(inp: _In) -> Image:
    n = inp.length("data_length")
    header = _dec_header(inp, "header")
    height = inp.i32("height")
    width = inp.i32("width")
    encoding = inp.string("encoding")
    is_bigendian = inp.byte("is_bigendian")
    step = inp.i32("step")
    data = inp.take(n, "data")
    return Image(header, height, width, encoding, is_bigendian, step, data)


def _dec_camera_info(inp: _In) -> CameraInfo:
    n = inp.length("D_length")
    header = _dec_header(inp, "header")
    height = inp.i32("height")
    width = inp.i32("width")
    model = inp.string("distortion_model")
    d = inp.f64s(n, "D")
    k = inp.f64s(9, "K")
    r = inp.f64s(9, "R")
    p = inp.f64s(12, "P")
    bx = inp.i32("binning_x")
    by = inp.i32("binning_y")
    roi = RegionOfInterest(
        x_offset=inp.i32("roi.x_offset"),
        y_offset=inp.i32("roi.y_offset"),
        height=inp.i32("roi.height"),
        width=inp.i32("roi.width"),
        do_rectify=inp.boolean("roi.do_rectify"),
    )
    return CameraInfo(header, height, width, model, d, k, r, p, bx, by, roi)


def _dec_point_cloud(inp: _In) -> PointCloud2:
    n_fields = inp.length("fields_length")
    n_data = inp.length("data_length")
    header = _dec_header(inp, "header")
    height = inp.i32("height")
    width = inp.i32("width")
    fields = []
    for i in range(n_fields):
        name = inp.string(f"fields[{i}].name")
        offset = inp.i32(f"fields[{i}].offset")
        datatype = inp.byte(f"fields[{i}].datatype")
        fields.append(PointField(name, offset, datatype, inp.i32(f"fields[{i}].count")))
    is_bigendian = inp.boolean("is_bigendian")
    point_step = inp.i32("point_step")
    row_step = inp.i32("row_step")
    data = inp.take(n_data, "data")
    is_dense = inp.boolean("is_dense")
    return PointCloud2(
        header, height, width, tuple(fields), is_bigendian, point_step, row_step, data, is_dense
    )


def _dec_tf(inp: _In) -> TFMessage:
    n = inp.length("transforms_length")
    transforms = []
    for i in range(n):
        what = f"transforms[{i}]"
        header = _dec_header(inp, f"{what}.header")
        child = inp.string(f"{what}.child_frame_id")
        translation = inp.f64s(3, f"{what}.transform.translation")
        rotation = inp.f64s(4, f"{what}.transform.rotation")
        transforms.append(TransformStamped(header, child, Transform(translation, rotation)))  # type: ignore[arg-type]
    return TFMessage(tuple(transforms))


M = TypeVar("M", Image, CameraInfo, PointCloud2, TFMessage)

_DECODERS: dict[type, Callable[[_In], Any]] = {
    Image: _dec_image,
    CameraInfo: _dec_camera_info,
    PointCloud2: _dec_point_cloud,
    TFMessage: _dec_tf,
}


def decode_lcm(cls: type[M], data: bytes | bytearray | memoryview) -> M:
    """Decode LCM bytes (fingerprint first) into a ``cls`` message.

    Raises ``LcmFingerprintError`` when the fingerprint is not ``cls``'s and ``LcmDecodeError``
    when the bytes are truncated, have negative lengths or carry trailing bytes.
    """
    decoder = _DECODERS.get(cls)
    if decoder is None:
        raise TypeError(
            f"decode_lcm cannot decode {cls.__name__}; "
            f"supported: {', '.join(c.__name__ for c in _DECODERS)}"
        )
    inp = _In(data)
    got = inp.take(8, f"{LCM_TYPE_NAMES[cls]} fingerprint")
    expected = FINGERPRINTS[cls]
    if got != expected:
        raise LcmFingerprintError(
            f"LCM fingerprint mismatch for {LCM_TYPE_NAMES[cls]}: expected {expected.hex()}, "
            f"got {got.hex()}",
            expected=expected,
            got=got,
        )
    message = decoder(inp)
    inp.finish(LCM_TYPE_NAMES[cls])
    return message
