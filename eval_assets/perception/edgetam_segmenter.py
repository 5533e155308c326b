"""EdgeTAM (the dimOS reference segmenter, a SAM2-family model) prompted with a box.

The code comes from the optional extra ``edgetam-dimos`` (``pip install 'eval_assets[edgetam]'``,
which installs the ``sam2`` package); the weights do not come with it and no registry ships them,
so the user supplies a checkpoint file. Both are checked when the segmenter is built, with errors
that say what to install or download; a missing model is never replaced by another segmenter.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.hashing import file_sha256
from eval_assets.perception.protocols import ConfigurationError, check_rgb

INSTALL_HINT = "pip install 'eval_assets[edgetam]'"
DEFAULT_CONFIG = "configs/edgetam.yaml"
CHECKPOINT_HINT = (
    "download edgetam.pt from the EdgeTAM release (https://github.com/facebookresearch/EdgeTAM, "
    "file checkpoints/edgetam.pt) and set the perception config field `edgetam_checkpoint` to "
    "its path"
)


def _sha256_prefix(path: Path, chars: int = 12) -> str:
    return file_sha256(path)[:chars]


class EdgeTAMSegmenter:
    """Box prompt → mask with EdgeTAM's image predictor (single-mask output).

    ``config`` is the Hydra config name inside the ``sam2`` package (default
    ``configs/edgetam.yaml``). The image embedding is cached for the last image, so the many
    boxes of one frame cost one encoder pass.
    """

    name = "edgetam"

    def __init__(self, checkpoint: str, config: str | None = None, *,
                 device: str = "cpu") -> None:
        """Check the checkpoint and the package, then load the model on ``device``."""
        if not checkpoint:
            raise ConfigurationError(
                f"segmenter 'edgetam' needs a checkpoint and none is configured: {CHECKPOINT_HINT}"
            )
        path = Path(checkpoint).expanduser()
        if not path.is_file():
            raise ConfigurationError(
                f"segmenter 'edgetam': checkpoint {path} does not exist: {CHECKPOINT_HINT}"
            )
        try:
            from sam2.build_sam import build_sam2
            from sam2.sam2_image_predictor import SAM2ImagePredictor
        except ImportError as exc:
            raise ConfigurationError(
                f"segmenter 'edgetam' needs the edgetam-dimos package (module sam2), which is not "
                f"installed: run `{INSTALL_HINT}` or choose segmenter 'box_region' or 'grabcut'"
            ) from exc
        self.config = config or DEFAULT_CONFIG
        try:
            model = build_sam2(self.config, str(path), device=device)
        except Exception as exc:  # hydra and torch raise many types; all mean "cannot load"
            raise ConfigurationError(
                f"segmenter 'edgetam': cannot load checkpoint {path} with config {self.config!r} "
                f"({exc}); check that the file is an EdgeTAM checkpoint matching the config"
            ) from exc
        self._predictor: Any = SAM2ImagePredictor(model)
        self._image_key: bytes | None = None
        self.version = f"edgetam|{self.config}|sha256:{_sha256_prefix(path)}"

    def segment(self, image: np.ndarray,
                box_xyxy: tuple[float, float, float, float]) -> np.ndarray:
        """Boolean (H, W) mask of the object inside ``box_xyxy`` (pixel edges)."""
        check_rgb(image)
        # Not a stored hash (only "same image as the last call?" in memory): the fastest digest.
        key = hashlib.blake2b(image.tobytes(), digest_size=16).digest()
        if key != self._image_key:
            self._predictor.set_image(image)
            self._image_key = key
        masks, _, _ = self._predictor.predict(box=np.asarray(box_xyxy, dtype=np.float32),
                                              multimask_output=False)
        return np.asarray(masks[0]) > 0
