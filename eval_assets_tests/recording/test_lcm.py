"""LCM wire format: fingerprints, hand-packed bytes, bounds-checked decoding."""

from __future__ import annotations

import struct

import pytest

from eval_assets.recording import decode_lcm, encode_lcm
from eval_assets.recording.errors import LcmDecodeError, LcmFingerprintError
from eval_assets.recording.lcm import FINGERPRINTS, LCM_STRUCTS, struct_base_hash
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

# From the spec (recording.md), i.e. what dimOS writes.
SPEC_FP = {
    Image: bytes.fromhex("535cface1f4f5717"),
    CameraInfo: bytes.fromhex("afb501b00707a02a"),
    PointCloud2: bytes.fromhex("f5eb3da1c2853175"),
    TFMessage: bytes.fromhex("c2b8a1c33a8923ec"),
}


def s(text: str) -> bytes:
    """An LCM string: uint32 length including the NUL, bytes, NUL."""
    raw = text.encode()
    return struct.pack(">I", len(raw) + 1) + raw + b"\x00"


def hdr(seq: int, sec: int, nsec: int, frame: str) -> bytes:
    return struct.pack(">iii", seq, sec, nsec) + s(frame)


IMAGE = Image(Header(7, 5, 6, "cam"), 2, 1, "rgb8", 0, 3, bytes([1, 2, 3, 0, 255, 9]))
IMAGE_BYTES = (
    SPEC_FP[Image]
    + struct.pack(">i", 6)  # data_length comes first
    + hdr(7, 5, 6, "cam")
    + struct.pack(">ii", 2, 1)
    + s("rgb8")
    + struct.pack(">Bi", 0, 3)
    + bytes([1, 2, 3, 0, 255, 9])
)

INFO = CameraInfo(
    Header(1, 2, 3, "c"),
    480,
    640,
    "plumb_bob",
    (0.5, -0.25, 0.0, 1e-3, 2.0),
    tuple(float(i) for i in range(9)),
    (1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0),
    tuple(float(-i) / 3 for i in range(12)),
    1,
    2,
    RegionOfInterest(3, 4, 5, 6, True),
)
INFO_BYTES = (
    SPEC_FP[CameraInfo]
    + struct.pack(">i", 5)  # D_length comes first
    + hdr(1, 2, 3, "c")
    + struct.pack(">ii", 480, 640)
    + s("plumb_bob")
    + struct.pack(">5d", 0.5, -0.25, 0.0, 1e-3, 2.0)
    + struct.pack(">9d", *range(9))
    + struct.pack(">9d", 1, 0, 0, 0, 1, 0, 0, 0, 1)
    + struct.pack(">12d", *(float(-i) / 3 for i in range(12)))
    + struct.pack(">ii", 1, 2)
    + struct.pack(">iiiib", 3, 4, 5, 6, 1)
)

CLOUD = PointCloud2(
    Header(0, 10, 20, "mid360_link"),
    1,
    1,
    (PointField("x", 0, 7, 1), PointField("intensity", 4, 7, 1)),
    False,
    8,
    8,
    struct.pack("<ff", 1.5, 7.0),
    True,
)
CLOUD_BYTES = (
    SPEC_FP[PointCloud2]
    + struct.pack(">ii", 2, 8)  # fields_length, data_length come first
    + hdr(0, 10, 20, "mid360_link")
    + struct.pack(">ii", 1, 1)
    + s("x")
    + struct.pack(">iBi", 0, 7, 1)
    + s("intensity")
    + struct.pack(">iBi", 4, 7, 1)
    + struct.pack(">b", 0)
    + struct.pack(">ii", 8, 8)
    + struct.pack("<ff", 1.5, 7.0)
    + struct.pack(">b", 1)
)

TF = TFMessage(
    (
        TransformStamped(
            Header(3, 100, 200, "base_link"),
            "mid360_link",
            Transform((0.1, 0.2, 0.3), (0.0, 0.0, 0.7071, 0.7071)),
        ),
    )
)
TF_BYTES = (
    SPEC_FP[TFMessage]
    + struct.pack(">i", 1)
    + hdr(3, 100, 200, "base_link")
    + s("mid360_link")
    + struct.pack(">3d", 0.1, 0.2, 0.3)
    + struct.pack(">4d", 0.0, 0.0, 0.7071, 0.7071)
)

CASES = [
    pytest.param(IMAGE, IMAGE_BYTES, id="Image"),
    pytest.param(INFO, INFO_BYTES, id="CameraInfo"),
    pytest.param(CLOUD, CLOUD_BYTES, id="PointCloud2"),
    pytest.param(TF, TF_BYTES, id="TFMessage"),
]


def test_fingerprints_match_the_spec() -> None:
    assert FINGERPRINTS == SPEC_FP


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Base hashes printed in the dimos-lcm 0.1.2 generated Python sources.
        ("geometry_msgs.Vector3", 0x573F2FDD2F76508F),
        ("std_msgs.Header", 0xDBB33F5B4C19B8EA),
        ("sensor_msgs.Image", 0x79D36C21D3C16094),
        ("sensor_msgs.CameraInfo", 0xB4EA6258BC6D0702),
        ("sensor_msgs.PointField", 0x702E0E03F04285D7),
        ("geometry_msgs.Transform", 0x1275BD1CCBDAF47F),
    ],
)
def test_member_tables_reproduce_dimos_lcm_base_hashes(name: str, expected: int) -> None:
    assert struct_base_hash(LCM_STRUCTS[name]) == expected


def test_moving_a_length_member_changes_the_fingerprint() -> None:
    # The hash is order-sensitive, so matching the spec fingerprint pins the field order.
    members = list(LCM_STRUCTS["sensor_msgs.Image"])
    moved = [*members[1:-1], members[0], members[-1]]
    assert struct_base_hash(moved) != struct_base_hash(members)


@pytest.mark.parametrize(("message", "expected"), CASES)
def test_encode_matches_hand_packed_bytes(message: object, expected: bytes) -> None:
    assert encode_lcm(message) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("message", "expected"), CASES)
def test_decode_of_hand_packed_bytes(message: object, expected: bytes) -> None:
    assert decode_lcm(type(message), expected) == message  # type: ignore[type-var]


@pytest.mark.parametrize(("message", "expected"), CASES)
def test_every_truncation_is_detected(message: object, expected: bytes) -> None:
    for n in range(len(expected)):
        with pytest.raises(LcmDecodeError):
            decode_lcm(type(message), expected[:n])  # type: ignore[type-var]


@pytest.mark.parametrize(("message", "expected"), CASES)
def test_trailing_bytes_are_rejected(message: object, expected: bytes) -> None:
    with pytest.raises(LcmDecodeError, match="unexpected bytes"):
        decode_lcm(type(message), expected + b"\x00")  # type: ignore[type-var]


def test_wrong_fingerprint_names_expected_and_got() -> None:
    with pytest.raises(LcmFingerprintError) as info:
        decode_lcm(CameraInfo, IMAGE_BYTES)
    assert "afb501b00707a02a" in str(info.value)
    assert "535cface1f4f5717" in str(info.value)
    assert info.value.got == SPEC_FP[Image]


def test_negative_array_length_is_rejected() -> None:
    bad = SPEC_FP[Image] + struct.pack(">i", -1) + IMAGE_BYTES[12:]
    with pytest.raises(LcmDecodeError, match="negative"):
        decode_lcm(Image, bad)


def test_string_without_nul_is_rejected() -> None:
    bad = IMAGE_BYTES.replace(s("cam"), struct.pack(">I", 4) + b"camX")
    with pytest.raises(LcmDecodeError, match="NUL"):
        decode_lcm(Image, bad)


def test_huge_declared_length_is_a_truncation_not_a_crash() -> None:
    bad = SPEC_FP[Image] + struct.pack(">i", 2**31 - 1) + IMAGE_BYTES[12:]
    with pytest.raises(LcmDecodeError, match="truncated"):
        decode_lcm(Image, bad)


def test_encoder_checks_fixed_array_sizes_and_ranges() -> None:
    short_k = CameraInfo(Header(), 1, 1, "plumb_bob", (), (1.0,) * 8, (0.0,) * 9, (0.0,) * 12)
    with pytest.raises(ValueError, match="K needs 9"):
        encode_lcm(short_k)
    too_wide = Image(Header(), 1, 2**31, "rgb8", 0, 3, b"")
    with pytest.raises(ValueError, match="width"):
        encode_lcm(too_wide)
    with pytest.raises(TypeError, match="cannot encode"):
        encode_lcm(Header())  # type: ignore[arg-type]


def test_multi_transform_message_round_trips_bit_exactly() -> None:
    edges = tuple(
        TransformStamped(
            Header(i, 1_700_000_000 + i, 999_999_999, "world"),
            f"child_{i}",
            Transform((1 / 3, -0.0, 1e-300), (0.1, -0.2, 0.3, 0.9)),
        )
        for i in range(3)
    )
    msg = TFMessage(edges)
    data = encode_lcm(msg)
    back = decode_lcm(TFMessage, data)
    assert back == msg
    assert encode_lcm(back) == data  # -0.0 and denormals survive bit for bit
