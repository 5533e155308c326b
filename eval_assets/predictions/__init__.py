"""Predictions: run VLMs under test over public datasets through an OpenAI-compatible API.

Modules: ``client`` (the ``VLMClient`` protocol, ``OpenAIVLMClient`` with retries and backoff,
``models.yaml`` loading), ``prompts`` (the dimOS runner prompt and the description task),
``store`` (the fsynced append-only journal that makes runs resumable), ``runner`` (refill
scheduling and the run folder), ``serve`` (the local OpenAI-compatible server) and ``baselines``
(the ``random`` and ``blind-smollm2`` models it serves). Nothing heavy is imported here: torch and
transformers load only when ``blind-smollm2`` is built, uvicorn only when something is served.
"""

from eval_assets.predictions.client import ClientSettings, OpenAIVLMClient, VLMClient
from eval_assets.predictions.runner import RunResult, load_public_cases, run_predictions

__all__ = [
    "ClientSettings",
    "OpenAIVLMClient",
    "RunResult",
    "VLMClient",
    "load_public_cases",
    "run_predictions",
]
