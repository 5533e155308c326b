"""The scorer: one module per metric, each exporting one :class:`~eval_assets.scoring.spec.
MetricSpec`, and :data:`METRICS`, the list the metric assets, the leaderboard and the report
iterate.

A spec joins what only the scorer may read (private labels, audit evidence, human annotations)
with the model's recorded answers and descriptions, and calls :mod:`eval_assets.metrics`. No
Dagster. Adding a metric is one module here, one line in :data:`METRICS`, and its tests.
"""

from __future__ import annotations

from typing import Any

from eval_assets.scoring.blind import BLIND
from eval_assets.scoring.chair import CHAIR
from eval_assets.scoring.circular import CIRCULAR
from eval_assets.scoring.flip import FLIP
from eval_assets.scoring.judge import JUDGE
from eval_assets.scoring.mcq import MCQ
from eval_assets.scoring.numeric import NUMERIC
from eval_assets.scoring.pope import POPE
from eval_assets.scoring.prompt_controls import REPEATS, STRUCTURED, TEMPLATES
from eval_assets.scoring.spatial import SPATIAL
from eval_assets.scoring.spec import MetricSpec
from eval_assets.scoring.time_controls import REPEAT_FRAMES, TIME_FLIP
from eval_assets.scoring.vision import VISION
from eval_assets.scoring.vqa import VQA

# In leaderboard column order and report section order.
METRICS: tuple[MetricSpec[Any], ...] = (VQA, CIRCULAR, FLIP, POPE, MCQ, JUDGE, VISION, CHAIR,
                                        NUMERIC, SPATIAL, TIME_FLIP, REPEAT_FRAMES, BLIND,
                                        TEMPLATES, REPEATS, STRUCTURED)

__all__ = ["METRICS", "MetricSpec"]
