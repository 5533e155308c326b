"""The user cache folder: what eval_assets keeps across storage roots, by content.

``$EVAL_ASSETS_CACHE``, else ``$XDG_CACHE_HOME/eval_assets``, else ``~/.cache/eval_assets``. It
holds only what is derived from content and keyed by its hash: SmolLM2's weights converted from
their GGUF file (``smollm2/``) and the judge's calibration outcomes (``calibration/``). It never
holds a model's answers to a benchmark. Deleting it is always safe: the next run rebuilds it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "EVAL_ASSETS_CACHE"


def cache_root() -> Path:
    """The user cache folder of eval_assets (``$EVAL_ASSETS_CACHE`` overrides it)."""
    forced = os.environ.get(CACHE_ENV)
    if forced:
        return Path(forced)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "eval_assets"
