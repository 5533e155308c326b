"""Blob codecs and the jpeg/raw image helpers."""

from __future__ import annotations

import importlib.util
import pickle

import numpy as np
import pytest

from eval_assets.recording import PAYLOAD_MODULES, encode_lcm, image_to_rgb, jpeg_image
from eval_assets.recording.codecs import decode_blob, encode_blob, message_class_for
from eval_assets.recording.errors import CodecError
from eval_assets.recording.messages import (
    CameraInfo,
    Header,
    Image,
    PointCloud2,
    TFMessage,
)
from eval_assets_tests.factories import frame_rgb


def test_payload_modules_are_dimos_class_paths() -> None:
    expected = {
        Image: "dimos.msgs.sensor_msgs.Image.Image",
        CameraInfo: "dimos.msgs.sensor_msgs.CameraInfo.CameraInfo",
        PointCloud2: "dimos.msgs.sensor_msgs.PointCloud2.PointCloud2",
        TFMessage: "dimos.msgs.tf2_msgs.TFMessage.TFMessage",
    }
    assert expected == PAYLOAD_MODULES
    # dimOS's Transform encodes itself as a one-transform TFMessage.
    assert message_class_for("dimos.msgs.geometry_msgs.Transform.Transform") is TFMessage
    assert message_class_for("dimos.msgs.nav_msgs.Odometry.Odometry") is None


def test_jpeg_image_round_trip_is_close_and_laid_out_like_dimos() -> None:
    rgb = frame_rgb(2, 64, 48)
    img = jpeg_image(rgb, Header.at(1.5, "cam"), quality=95)
    assert (img.encoding, img.width, img.height, img.step, img.is_bigendian) == (
        "jpeg",
        64,
        48,
        0,
        0,
    )
    assert img.data[:2] == b"\xff\xd8"  # a plain JPEG file, no wrapper
    back = image_to_rgb(img)
    assert back.shape == (48, 64, 3) and back.dtype == np.uint8
    # Lossy, but channel order must be right: the red square stays red.
    assert np.abs(back.astype(int) - rgb.astype(int)).mean() < 4
    assert back[24, 12, 0] > 180 and back[24, 12, 2] < 80  # square spans x 6..17


def test_jpeg_image_is_deterministic() -> None:
    rgb = frame_rgb(1, 32, 24)
    assert jpeg_image(rgb, Header()).data == jpeg_image(rgb, Header()).data


def test_jpeg_image_rejects_wrong_arrays() -> None:
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        jpeg_image(np.zeros((4, 4), np.uint8), Header())
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        jpeg_image(np.zeros((4, 4, 3), np.float32), Header())


def test_raw_encodings_convert_exactly_honouring_step() -> None:
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    padded = b"".join(row.tobytes() + b"\xee\xee" for row in rgb)  # step 11 > 9
    assert np.array_equal(image_to_rgb(Image(Header(), 2, 3, "rgb8", 0, 11, padded)), rgb)
    bgr = rgb[:, :, ::-1].tobytes()
    assert np.array_equal(image_to_rgb(Image(Header(), 2, 3, "bgr8", 0, 9, bgr)), rgb)
    grey = np.array([[0, 50, 100], [150, 200, 250]], np.uint8)
    out = image_to_rgb(Image(Header(), 2, 3, "mono8", 0, 3, grey.tobytes()))
    assert np.array_equal(out, np.repeat(grey[:, :, None], 3, axis=2))


def test_image_to_rgb_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="'16UC1' is not supported"):
        image_to_rgb(Image(Header(), 1, 1, "16UC1", 0, 2, b"\x00\x00"))
    with pytest.raises(ValueError, match="needs 6 bytes"):
        image_to_rgb(Image(Header(), 1, 2, "rgb8", 0, 6, b"\x00\x00"))
    with pytest.raises(ValueError, match="not a decodable JPEG"):
        image_to_rgb(Image(Header(), 1, 1, "jpeg", 0, 0, b"not a jpeg"))
    wrong_size = jpeg_image(frame_rgb(0, 16, 8), Header())
    lying = Image(wrong_size.header, 9, 16, "jpeg", 0, 0, wrong_size.data)
    with pytest.raises(ValueError, match="16x8 but the Image header says 16x9"):
        image_to_rgb(lying)


def test_decode_blob_refuses_pickle_unless_allowed() -> None:
    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (ValueError, ("unpickled!",))

    data = pickle.dumps(Boom())
    with pytest.raises(CodecError, match="allow_pickle=True"):
        decode_blob(data, "pickle", "x.Boom")
    # With the opt-in the payload really is unpickled (here it builds a ValueError).
    assert isinstance(decode_blob(data, "pickle", "x.Boom", allow_pickle=True), ValueError)


def test_decode_blob_unknown_codec_and_payload() -> None:
    image = Image(Header(), 1, 1, "mono8", 0, 1, b"\x07")
    with pytest.raises(CodecError, match="unknown codec_id 'zstd'"):
        decode_blob(encode_lcm(image), "zstd", PAYLOAD_MODULES[Image])
    with pytest.raises(CodecError, match="not a message this reader decodes"):
        decode_blob(encode_lcm(image), "lcm", "dimos.msgs.nav_msgs.Odometry.Odometry")
    assert decode_blob(encode_lcm(image), "lcm", PAYLOAD_MODULES[Image]) == image


def test_lz4_codec_without_lz4_says_how_to_fix() -> None:
    if importlib.util.find_spec("lz4") is None:
        with pytest.raises(CodecError, match="pip install lz4"):
            decode_blob(b"\x04\x22\x4d\x18", "lz4+lcm", PAYLOAD_MODULES[Image])
    else:
        with pytest.raises(CodecError, match="does not decompress"):
            decode_blob(b"not lz4", "lz4+lcm", PAYLOAD_MODULES[Image])


def test_encode_blob_jpeg_requires_a_jpeg_image() -> None:
    raw = Image(Header(), 1, 1, "rgb8", 0, 3, b"\x01\x02\x03")
    with pytest.raises(CodecError, match="jpeg_image"):
        encode_blob(raw, "jpeg")
    with pytest.raises(CodecError, match="not writable"):
        encode_blob(raw, "pickle")
    assert encode_blob(raw, "lcm") == encode_lcm(raw)
