"""An image's size read from its compressed header, checked before it is decoded.

A compressed image's size says nothing about its decoded size: a 1.2 MB PNG of 20000×20000
pixels decodes to 1.2 GB of RGB (2.5 GB with the copies around it). OpenCV's own limit (2^30
pixels) lets that through, so every decode of bytes from a recording or a dataset first reads the
width and height from the PNG or JPEG header (:func:`compressed_dimensions`, a few bytes) and
refuses an image over :func:`max_image_pixels` (:func:`check_decode_size`), with a message that
says so. The caller treats it as that one image's problem (a skipped frame), never the
recording's.
"""

from __future__ import annotations

import os
import struct

DEFAULT_MAX_IMAGE_PIXELS = 64_000_000
"""The most pixels an image may have to be decoded (8000×8000; 192 MB as RGB): far above any
robot camera, far below what would exhaust a machine's memory. ``$EVAL_ASSETS_MAX_IMAGE_PIXELS``
overrides it."""

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (baseline, progressive, lossless, arithmetic...); not DHT (C4),
# JPG (C8) or DAC (CC), which share the range.
_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                          0xCE, 0xCF})
# Markers without a length field.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})


class ImageTooLargeError(ValueError):
    """An image whose header declares more pixels than may be decoded."""


def max_image_pixels() -> int:
    """The decode limit: ``$EVAL_ASSETS_MAX_IMAGE_PIXELS`` or :data:`DEFAULT_MAX_IMAGE_PIXELS`."""
    return int(os.environ.get("EVAL_ASSETS_MAX_IMAGE_PIXELS", DEFAULT_MAX_IMAGE_PIXELS))


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None  # not at a marker: a damaged header (the decoder will say so)
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _STANDALONE:
            i += 2
            continue
        if marker in _SOF_MARKERS:
            if i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        if marker == 0xDA:  # start of scan before any frame header: none to read
            return None
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        i += 2 + length
    return None


def compressed_dimensions(data: bytes) -> tuple[str, int, int] | None:
    """``(format, width, height)`` from a PNG's IHDR or a JPEG's frame header; None otherwise.

    Reads the header only: no pixel is decoded. None for other formats and damaged headers
    (the decoder then decides).
    """
    if data[:8] == _PNG_SIGNATURE and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return "PNG", width, height
    if data[:2] == b"\xff\xd8":
        size = _jpeg_dimensions(data)
        return None if size is None else ("JPEG", *size)
    return None


def check_decode_size(data: bytes, what: str = "image", limit: int | None = None,
                      ) -> tuple[str, int, int] | None:
    """The header's ``(format, width, height)`` (None: unknown); raises
    :class:`ImageTooLargeError` when it declares more than ``limit`` pixels
    (default :func:`max_image_pixels`).

    ``what`` names the image in the message (``frame 12``, a file path).
    """
    found = compressed_dimensions(data)
    if found is None:
        return None
    fmt, width, height = found
    limit = max_image_pixels() if limit is None else limit
    if width * height > limit:
        raise ImageTooLargeError(
            f"{what} is a {width}x{height} {fmt} ({width * height / 1e6:.3g} megapixels in "
            f"{len(data) / 1e6:.1f} MB), over the decode limit of {limit / 1e6:g} megapixels: "
            f"not decoded, since it would take {width * height * 3 / 1e9:.1f} GB as RGB "
            "(a decompression bomb, or a wrong image)")
    return found
