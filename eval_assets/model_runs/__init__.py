"""Model runs: a VLM under test asked every case of a public dataset, into a resumable run folder.

What a run produces is the model's predictions (the ``predictions`` asset, records in
:mod:`eval_assets.schemas.predictions`); this package is what runs the model.

Modules: ``client`` (the ``VLMClient`` protocol, ``OpenAIVLMClient`` and ``open_model``, which
opens a models-file entry's endpoint), ``prompts`` (the dimOS runner prompt and the description
task), ``store`` (the resume keys of the run journals), ``runner`` (refill scheduling and the run
folder) and ``cli``. The local baselines a run may serve are :mod:`eval_assets.local_models`.
Nothing heavy is imported here.
"""

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient, VLMClient
from eval_assets.model_runs.runner import RunResult, load_public_cases, run_model

__all__ = [
    "ClientSettings",
    "OpenAIVLMClient",
    "RunResult",
    "VLMClient",
    "load_public_cases",
    "run_model",
]
