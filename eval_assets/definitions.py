"""The eval_assets code location: one ``Definitions`` assembled from small modules."""

from __future__ import annotations

from dagster import Definitions, load_assets_from_modules

from eval_assets.assets import frames, ingest, perception, predictions, vqa
from eval_assets.executors import executor_from_env
from eval_assets.jobs import recording_pipeline_job
from eval_assets.resources import (
    PerceptionResource,
    ProjectStorage,
    QuestionAuthorResource,
    VLMClientResource,
)
from eval_assets.sensors import new_recordings_sensor

defs = Definitions(
    assets=load_assets_from_modules([ingest, frames, perception, vqa, predictions]),
    jobs=[recording_pipeline_job],
    sensors=[new_recordings_sensor],
    resources={"storage": ProjectStorage(), "perception": PerceptionResource(),
               "question_author": QuestionAuthorResource(), "vlm": VLMClientResource()},
    executor=executor_from_env(),
)
