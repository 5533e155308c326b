"""dimOS recordings: read (with validation at open), write, and the LCM message codec."""

from eval_assets.recording.codecs import PAYLOAD_MODULES, image_to_rgb, jpeg_image
from eval_assets.recording.errors import RecordingError
from eval_assets.recording.lcm import decode_lcm, encode_lcm
from eval_assets.recording.reader import REQUIRED_STREAMS, Recording, StreamInfo
from eval_assets.recording.writer import RecordingWriter

__all__ = [
    "PAYLOAD_MODULES",
    "REQUIRED_STREAMS",
    "Recording",
    "RecordingError",
    "RecordingWriter",
    "StreamInfo",
    "decode_lcm",
    "encode_lcm",
    "image_to_rgb",
    "jpeg_image",
]
