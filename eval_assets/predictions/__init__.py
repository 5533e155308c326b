"""Predictions: run VLMs under test over public datasets through an OpenAI-compatible API.

Modules: ``client`` (the ``VLMClient`` protocol, ``OpenAIVLMClient`` and ``open_model``, which
opens a models-file entry's endpoint), ``prompts`` (the dimOS runner prompt and the description
task), ``store`` (the resume keys of the run journals), ``runner`` (refill scheduling and the run
folder) and ``cli``. The local baselines a run may serve are :mod:`eval_assets.local_models`.
Nothing heavy is imported here.
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
