"""Moondream ``detect`` (the dimOS reference detector) through the ``moondream`` client.

Two deployments speak the same HTTP API: Moondream Cloud (an API key, sent as
``X-Moondream-Auth``) and Moondream Station, a local server given by its endpoint URL (for example
``http://localhost:2020/v1``). The client posts the image as a JPEG data URL to
``{endpoint}/detect`` and gets back ``{"objects": [{"x_min", "y_min", "x_max", "y_max"}]}`` with
coordinates normalised to ``0..1``; they are converted to pixel edges here. The package is an
optional extra (``pip install 'eval_assets[moondream]'``), imported only when this detector is
built.
"""

from __future__ import annotations

import json
import math
import urllib.error
from typing import Any

import numpy as np

from eval_assets.perception.protocols import Box, ConfigurationError, PerceptionError, check_rgb

DEFAULT_API_KEY_ENV = "MOONDREAM_API_KEY"
INSTALL_HINT = "pip install 'eval_assets[moondream]'"
# Moondream's detect reports no confidence; every returned box is a committed detection.
_DETECT_SCORE = 1.0


def _import_moondream() -> Any:
    try:
        import moondream
    except ImportError as exc:
        raise ConfigurationError(
            f"detector 'moondream' needs the moondream client, which is not installed: "
            f"run `{INSTALL_HINT}` or choose detector 'color'"
        ) from exc
    return moondream


def boxes_from_objects(objects: Any, width: int, height: int, source: str) -> list[Box]:
    """Pixel-edge boxes from Moondream's normalised ``objects`` list, clipped to the image.

    ``source`` names where the reply came from, for error messages. A reply that is not a list
    of objects with four finite numbers is a :class:`PerceptionError`, never an empty result.
    """
    if not isinstance(objects, list):
        raise PerceptionError(
            f"{source}: 'objects' should be a list of boxes, got {type(objects).__name__}; "
            "check that the endpoint is a Moondream /v1 API"
        )
    boxes: list[Box] = []
    for i, obj in enumerate(objects):
        try:
            coords = [float(obj[k]) for k in ("x_min", "y_min", "x_max", "y_max")]
        except (KeyError, TypeError, ValueError) as exc:
            raise PerceptionError(
                f"{source}: object {i} is {obj!r}, expected numbers x_min, y_min, x_max, y_max; "
                "check that the endpoint is a Moondream /v1 API"
            ) from exc
        if not all(math.isfinite(c) for c in coords):
            raise PerceptionError(f"{source}: object {i} has non-finite coordinates {coords}")
        x0, y0, x1, y1 = (min(max(c, 0.0), 1.0) for c in coords)
        if x1 <= x0 or y1 <= y0:
            continue  # empty after clipping to the image: nothing of it is visible
        boxes.append(Box((x0 * width, y0 * height, x1 * width, y1 * height), _DETECT_SCORE))
    return boxes


class MoondreamDetector:
    """Object name → boxes via Moondream ``detect``, on Moondream Cloud or a Station endpoint.

    Give ``api_key`` (cloud), ``endpoint`` (a Station or compatible server; a key is sent too if
    given), or both. Neither is a :class:`ConfigurationError`: there is no offline fallback.
    """

    name = "moondream"

    def __init__(self, api_key: str | None, endpoint: str | None, *, model: str | None = None,
                 api_key_env: str = DEFAULT_API_KEY_ENV) -> None:
        """Build the client; ``api_key_env`` is only named in error messages."""
        if not api_key and not endpoint:
            raise ConfigurationError(
                "detector 'moondream' needs an API key or an endpoint: set the environment "
                f"variable {api_key_env} (named by perception config field "
                "`moondream_api_key_env`) to a Moondream Cloud key, or set "
                "`moondream_endpoint` to a Moondream Station URL such as "
                "http://localhost:2020/v1"
            )
        md = _import_moondream()
        self.endpoint = (endpoint or md.DEFAULT_ENDPOINT).rstrip("/")
        kwargs: dict[str, Any] = {"api_key": api_key or None, "endpoint": self.endpoint}
        if model:
            kwargs["model"] = model
        self._client = md.vl(**kwargs)
        self.version = f"moondream-client-{md.__version__}|{model or 'default'}|{self.endpoint}"

    def detect(self, image: np.ndarray, object_name: str) -> list[Box]:
        """Boxes of ``object_name`` in pixel edges, in the order the server returned them."""
        from PIL import Image  # installed with the moondream extra

        check_rgb(image)
        height, width = image.shape[:2]
        source = f"moondream {self.endpoint}/detect ({object_name!r})"
        try:
            reply = self._client.detect(Image.fromarray(image), object_name)
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")[:300]
            hint = ("check the API key in the variable named by `moondream_api_key_env`"
                    if exc.code in (401, 403) else "check the server's log")
            raise PerceptionError(f"{source}: HTTP {exc.code} {exc.reason}: {body}; {hint}") \
                from exc
        except urllib.error.URLError as exc:
            raise PerceptionError(
                f"{source}: cannot reach the server ({exc.reason}); check `moondream_endpoint` "
                "and that the server is running"
            ) from exc
        except (json.JSONDecodeError, KeyError) as exc:
            raise PerceptionError(
                f"{source}: the reply is not a Moondream detect result ({exc!r}); check that the "
                "endpoint is a Moondream /v1 API"
            ) from exc
        return boxes_from_objects(reply.get("objects"), width, height, source)
