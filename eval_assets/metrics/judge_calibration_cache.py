"""The judge's calibration outcome, kept across storage roots by the content it was computed from.

Calibrating the offline judge (blind SmolLM2 on ~1.4k-token rubric prompts) costs tens of seconds
of CPU, and every fresh storage root (each demo) asked the same questions of the same model again.
The outcome depends only on what the judge is and what it is asked, so it is kept in a user cache
folder (:mod:`eval_assets.user_cache`: ``$EVAL_ASSETS_CACHE``, else
``$XDG_CACHE_HOME/eval_assets``, else ``~/.cache/eval_assets``; ``calibration/<key>.json``, written
atomically) under a key that is the
SHA-256 of:

- the served local model's identity
  (:func:`~eval_assets.local_models.registry.local_model_identity`: its weights' SHA-256, its
  reply recipe, the torch and transformers versions);
- the judge config as loaded, less where it was reached (its URL and key variable, which opening
  a served model sets): the rubric's settings, the calibration thresholds, the seed, the reply
  limits;
- for each planned calibration pair, its id, corruption kind and the SHA-256 of the exact request
  bodies the judge would send for the reference and the corruption (the prompt template, the
  references, the corrupted texts and the frame's evidence are all in them).

Anything that could change an answer changes the key, so a changed calibration set, prompt,
config or model misses. Only a served local model is cached: a remote endpoint's weights cannot be
hashed and may change under the same name (its calls are still journalled in the storage root).
An outcome touched by a transient failure (timeout, rate limit, a failed API call) is not kept.
Model answers to the benchmark itself are never cached here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from eval_assets.atomic import write_text_atomic
from eval_assets.hashing import canonical_json_sha256
from eval_assets.metrics.avlm_rows import PredictionRow
from eval_assets.metrics.judge_calibration import (
    CalibrationItem,
    CalibrationReport,
    build_calibration_set,
)
from eval_assets.metrics.judge_config import JudgeConfig
from eval_assets.metrics.judge_journal import request_sha256
from eval_assets.user_cache import CACHE_ENV, cache_root

__all__ = ["CACHE_ENV", "CalibrationCache", "cache_root", "cached_calibration_key",
           "calibration_key", "keepable", "served_model"]

log = logging.getLogger(__name__)

# Bump when the meaning of a cached report changes (its schema or the gate's rule).
CACHE_VERSION = 1
# Failure categories that say nothing about the judge: an outcome with one is not kept.
TRANSIENT_ERRORS = frozenset({"timeout", "rate_limited", "api_failed", "retry_after_too_long"})


class RequestBuilder(Protocol):
    """A judge that can say which request its calibration call for a row sends."""

    def score_only_request(self, row: PredictionRow) -> dict[str, Any]:
        """The score-only request body for ``row``."""
        ...


def calibration_key(model_identity: str, config: JudgeConfig, items: Sequence[CalibrationItem],
                    judge: RequestBuilder) -> str:
    """The cache key of calibrating ``judge`` (configured by ``config``, serving the model of
    ``model_identity``) on ``items``; see the module docstring for what it covers."""
    settings = config.model_dump(mode="json")
    # Opening a served model sets its URL (a new port each run) and drops its key variable.
    for field in ("base_url", "api_key_env"):
        settings.get("endpoint", {}).pop(field, None)
    pairs = [[item.pair_id, item.kind,
              request_sha256(judge.score_only_request(item.reference_row())),
              request_sha256(judge.score_only_request(item.corrupted_row()))] for item in items]
    return canonical_json_sha256({"version": CACHE_VERSION, "model": model_identity,
                                  "config": settings, "pairs": pairs})


def keepable(report: CalibrationReport) -> bool:
    """Whether ``report`` may be kept: a decided gate that no transient failure touched."""
    if report.status not in ("passed", "failed"):
        return False
    errors = {e for p in report.pairs for e in (p.reference_error, p.corrupted_error) if e}
    return not errors & TRANSIENT_ERRORS


class CalibrationCache:
    """Calibration reports by key in ``root/calibration`` (default :func:`cache_root`)."""

    def __init__(self, root: Path | None = None) -> None:
        self.folder = (root if root is not None else cache_root()) / "calibration"

    def path(self, key: str) -> Path:
        """Where the report of ``key`` is kept."""
        return self.folder / f"{key}.json"

    def get(self, key: str) -> CalibrationReport | None:
        """The kept report of ``key``; None when there is none or it cannot be read."""
        path = self.path(key)
        try:
            return CalibrationReport.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("judge calibration cache %s is unreadable (%s); calibrating again",
                        path, exc)
            return None

    def put(self, key: str, report: CalibrationReport) -> None:
        """Keep ``report`` under ``key`` (atomically); a folder that cannot be written is only a
        warning: the next run calibrates again."""
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, report.model_dump_json(indent=1) + "\n")
        except OSError as exc:
            log.warning("judge calibration not cached: cannot write %s (%s); set %s to a "
                        "writable folder", path, exc, CACHE_ENV)


def served_model(config: JudgeConfig) -> str | None:
    """The local model ``config``'s judge is served by, None for a remote endpoint.

    Before opening, a served judge has ``serve`` and no ``base_url``; once opened
    (:func:`~eval_assets.openai_chat.open_endpoint`) it has its local URL, still its ``serve``, and
    no key variable (a remote judge always names one: ``CLIENT_API_KEY`` unless set).
    """
    endpoint = config.endpoint
    if endpoint.serve is not None and (endpoint.base_url is None or endpoint.api_key_env is None):
        return endpoint.serve
    return None


def cached_calibration_key(rows: Sequence[PredictionRow], config: JudgeConfig,
                           judge: object) -> str | None:
    """The key for calibrating ``judge`` on ``rows`` as ``config`` says, or None when it is not
    cacheable (a remote endpoint, or a judge that cannot show its requests)."""
    serve = served_model(config)
    if serve is None:
        return None
    if not callable(getattr(judge, "score_only_request", None)):
        return None
    from eval_assets.local_models.registry import local_model_identity

    items = build_calibration_set(rows, max_pairs=config.calibration_pairs,
                                  max_frames=config.calibration_frames, seed=config.seed)
    if not items:
        return None
    identity = local_model_identity(serve, config.endpoint.seed)
    return calibration_key(identity, config, items, judge)  # type: ignore[arg-type]
