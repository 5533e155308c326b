"""Blob codecs of a dimOS recording and the image helpers around the ``jpeg`` codec.

dimOS (``dimos.memory2.codecs``) names codecs by id: ``lcm`` stores a message's LCM bytes;
``jpeg`` stores an LCM ``sensor_msgs.Image`` whose ``encoding`` is ``"jpeg"`` and whose data is a
JPEG file (``Image.lcm_jpeg_encode``: step 0, is_bigendian 0); ``lz4+lcm`` wraps LCM bytes in LZ4
(depth images); ``pickle`` is dimOS's fallback for everything else. Pickle is never unpickled
unless the caller opts in.
"""

from __future__ import annotations

import pickle
from typing import Any

import cv2
import numpy as np

from eval_assets.recording.errors import CodecError
from eval_assets.recording.image_size import check_decode_size
from eval_assets.recording.lcm import decode_lcm, encode_lcm
from eval_assets.recording.messages import CameraInfo, Header, Image, PointCloud2, TFMessage

PAYLOAD_MODULES: dict[type, str] = {
    Image: "dimos.msgs.sensor_msgs.Image.Image",
    CameraInfo: "dimos.msgs.sensor_msgs.CameraInfo.CameraInfo",
    PointCloud2: "dimos.msgs.sensor_msgs.PointCloud2.PointCloud2",
    TFMessage: "dimos.msgs.tf2_msgs.TFMessage.TFMessage",
}
"""Message class -> the ``payload_module`` dimOS stores in ``_streams.config``."""

# dimOS's geometry_msgs Transform encodes itself as a one-transform TFMessage, so a stream of
# Transform payloads decodes as TFMessage.
_CLASS_BY_NAME: dict[str, type] = {
    "Image": Image,
    "CameraInfo": CameraInfo,
    "PointCloud2": PointCloud2,
    "TFMessage": TFMessage,
    "Transform": TFMessage,
}

CODEC_IDS: tuple[str, ...] = ("jpeg", "lcm", "lz4+lcm", "pickle")
"""Every codec id dimOS writes; anything else is unknown."""

WRITABLE_CODECS: tuple[str, ...] = ("jpeg", "lcm")


def message_class_for(payload_module: str) -> type | None:
    """The message class a ``payload_module`` decodes to (by its class name), or None."""
    return _CLASS_BY_NAME.get(payload_module.rsplit(".", 1)[-1])


def decode_blob(
    data: bytes, codec_id: str, payload_module: str, *, allow_pickle: bool = False
) -> Any:
    """Decode one ``<stream>_blob.data`` value with the stream's codec.

    Raises ``CodecError`` for an unknown codec, a refused pickle, a payload this package cannot
    decode or a missing optional dependency, and ``LcmDecodeError`` for corrupt LCM bytes.
    """
    if codec_id not in CODEC_IDS:
        raise CodecError(f"unknown codec_id {codec_id!r}; known: {', '.join(CODEC_IDS)}")
    if codec_id == "pickle":
        if not allow_pickle:
            raise CodecError(
                "codec 'pickle' is refused: unpickling runs code from the file. Fix: pass "
                "allow_pickle=True only for recordings you trust"
            )
        try:
            return pickle.loads(data)  # trusted by explicit opt-in (allow_pickle=True)
        except Exception as exc:  # unpickling can raise anything, e.g. a missing dimos module
            raise CodecError(f"pickle payload does not load: {type(exc).__name__}: {exc}") from exc
    cls = message_class_for(payload_module)
    if cls is None:
        raise CodecError(
            f"payload_module {payload_module!r} is not a message this reader decodes "
            f"(Image, CameraInfo, PointCloud2, TFMessage)"
        )
    if codec_id == "lz4+lcm":
        data = _lz4_decompress(data)
    if codec_id == "jpeg" and cls is not Image:
        raise CodecError(f"codec 'jpeg' holds Images, but payload_module is {payload_module!r}")
    return decode_lcm(cls, data)


def _lz4_decompress(data: bytes) -> bytes:
    try:
        import lz4.frame  # type: ignore[import-not-found]
    except ImportError as exc:
        raise CodecError(
            "codec 'lz4+lcm' needs the 'lz4' package, which is not installed. Fix: pip install lz4"
        ) from exc
    try:
        return bytes(lz4.frame.decompress(data))
    except Exception as exc:  # lz4 raises RuntimeError subclasses of its own
        raise CodecError(f"lz4 payload does not decompress: {exc}") from exc


def encode_blob(message: Any, codec_id: str) -> bytes:
    """Encode ``message`` for a stream with ``codec_id`` (``jpeg`` or ``lcm``)."""
    if codec_id not in WRITABLE_CODECS:
        raise CodecError(
            f"codec {codec_id!r} is not writable here; use one of {', '.join(WRITABLE_CODECS)}"
        )
    if codec_id == "jpeg" and (not isinstance(message, Image) or message.encoding != "jpeg"):
        raise CodecError(
            "codec 'jpeg' stores Images whose encoding is 'jpeg'. Fix: build the message with "
            "jpeg_image(rgb, header)"
        )
    return encode_lcm(message)


def jpeg_image(rgb: np.ndarray, header: Header, quality: int = 90) -> Image:
    """An ``Image`` with ``encoding="jpeg"`` holding ``rgb`` (H×W×3 uint8) compressed as JPEG.

    Laid out as dimOS's ``lcm_jpeg_encode`` does: ``step`` 0 and ``is_bigendian`` 0.
    """
    arr = np.asarray(rgb)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"jpeg_image needs an HxWx3 uint8 array, got {arr.dtype} {arr.shape}")
    if not 1 <= quality <= 100:
        raise ValueError(f"jpeg_image quality must be 1..100, got {quality}")
    bgr = np.ascontiguousarray(arr[:, :, ::-1])
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError(f"OpenCV could not JPEG-encode an array of shape {arr.shape}")
    height, width = arr.shape[:2]
    return Image(header, height, width, "jpeg", 0, 0, buf.tobytes())


_RAW_CHANNELS: dict[str, tuple[int, tuple[int, ...] | None]] = {
    # encoding -> (channels, index order to RGB; None = grey)
    "rgb8": (3, (0, 1, 2)),
    "bgr8": (3, (2, 1, 0)),
    "rgba8": (4, (0, 1, 2)),
    "bgra8": (4, (2, 1, 0)),
    "mono8": (1, None),
}


def image_to_rgb(img: Image) -> np.ndarray:
    """The pixels of ``img`` as H×W×3 uint8 RGB (encoding jpeg, rgb8, bgr8, rgba8, bgra8, mono8)."""
    if img.encoding == "jpeg":
        # The header's size first: a bomb or a wrong image is refused before any pixel is decoded.
        found = check_decode_size(img.data, f"Image data ({img.width}x{img.height} by its header)")
        if found is not None and found[1:] != (img.width, img.height):
            raise ValueError(f"{found[0]} is {found[1]}x{found[2]} but the Image header says "
                             f"{img.width}x{img.height}")
        bgr = cv2.imdecode(np.frombuffer(img.data, dtype=np.uint8), cv2.IMREAD_COLOR)
        if bgr is None:
            raise ValueError(f"Image data ({len(img.data)} bytes) is not a decodable JPEG")
        if bgr.shape[:2] != (img.height, img.width):
            raise ValueError(
                f"JPEG is {bgr.shape[1]}x{bgr.shape[0]} but the Image header says "
                f"{img.width}x{img.height}"
            )
        return np.ascontiguousarray(bgr[:, :, ::-1])
    layout = _RAW_CHANNELS.get(img.encoding)
    if layout is None:
        raise ValueError(
            f"Image encoding {img.encoding!r} is not supported; supported: jpeg, "
            f"{', '.join(_RAW_CHANNELS)}"
        )
    channels, order = layout
    row = img.width * channels
    step = img.step or row  # step 0 means tightly packed rows
    if step < row or len(img.data) < step * (img.height - 1) + row:
        raise ValueError(
            f"Image {img.width}x{img.height} {img.encoding} with step {step} needs "
            f"{step * (img.height - 1) + row} bytes, data has {len(img.data)}"
        )
    buf = np.frombuffer(img.data, dtype=np.uint8)
    rows = np.lib.stride_tricks.as_strided(buf, shape=(img.height, row), strides=(step, 1))
    pixels = rows.reshape(img.height, img.width, channels)
    if order is None:
        return np.repeat(pixels, 3, axis=2)
    return np.ascontiguousarray(pixels[:, :, list(order)])
