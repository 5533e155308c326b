"""The eval_assets code location: one ``Definitions`` assembled from small modules.

The metric assets come from the metric registry (:data:`eval_assets.scoring.METRICS`, one asset
per spec, :data:`~eval_assets.defs.assets.metrics.METRIC_ASSETS`): a new metric needs no line
here. A change to the graph shows in ``eval_assets_tests/defs/snapshots/definitions.json``;
``make snapshots`` regenerates it for review.
"""

from __future__ import annotations

from dagster import Definitions, load_asset_checks_from_modules, load_assets_from_modules

from eval_assets.defs import checks
from eval_assets.defs.assets import (
    evidence_quality,
    frames,
    ingest,
    metrics,
    perception,
    predictions,
    report,
    sources,
    tracks,
    vqa,
)
from eval_assets.defs.assets.metrics import METRIC_ASSETS
from eval_assets.defs.automation import automation_sensor, nightly_benchmark, recordings_sensor
from eval_assets.defs.executors import executor_from_env
from eval_assets.defs.jobs import (
    leaderboard_report_job,
    model_benchmark_job,
    recording_pipeline_job,
)
from eval_assets.defs.resources import (
    JudgeResource,
    PerceptionResource,
    ProjectStorage,
    QuestionAuthorResource,
    ScoringResource,
    VLMClientResource,
)
from eval_assets.vqa.declarations import BUILT_IN as _FAMILIES  # noqa: F401 (declares every family)

ASSET_MODULES = [sources, ingest, frames, perception, tracks, vqa, evidence_quality, predictions,
                 metrics, report]

defs = Definitions(
    assets=[*load_assets_from_modules(ASSET_MODULES), *METRIC_ASSETS.values()],
    asset_checks=load_asset_checks_from_modules([checks]),
    jobs=[recording_pipeline_job, model_benchmark_job, leaderboard_report_job],
    schedules=[nightly_benchmark],
    sensors=[recordings_sensor, automation_sensor],
    resources={
        "storage": ProjectStorage(),
        "perception": PerceptionResource(),
        "question_author": QuestionAuthorResource(),
        "vlm": VLMClientResource(),
        "scoring": ScoringResource(),
        "judge": JudgeResource(),
    },
    executor=executor_from_env(),
)
