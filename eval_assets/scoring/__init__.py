"""The scorer: one module per metric, each exporting its :class:`~eval_assets.scoring.spec.
MetricSpec`, and :data:`METRICS`, the registry the metric assets, the leaderboard and the report
iterate.

A spec joins what only the scorer may read (private labels, audit evidence, human annotations)
with the model's recorded answers and descriptions, and calls :mod:`eval_assets.metrics`. No
Dagster.

The registry is every ``MetricSpec`` a module of this package defines at module level, found by
importing each module (:func:`_discovered`; the import-cycle test follows this scan), sorted by
the specs' ``order``. Adding a metric is its module here and its tests, nothing else: the Dagster
layer derives its asset and its key from :data:`METRICS`, the leaderboard its columns and the
report its section. Its new asset then shows in the definitions snapshot; regenerate it, and
review the diff, with the one command ``make snapshots`` (``EVAL_ASSETS_UPDATE_SNAPSHOTS=1
.venv/bin/pytest eval_assets_tests/defs/test_definitions_snapshot.py``).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from eval_assets.scoring.spec import MetricSpec


def _discovered() -> tuple[MetricSpec[Any], ...]:
    """Every spec defined by a module of this package (one imported by another is the same
    object), by ``(order, name)``; a ValueError when two specs share a name."""
    found: dict[str, MetricSpec[Any]] = {}
    for module in pkgutil.iter_modules(__path__, f"{__name__}."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, MetricSpec) and found.setdefault(value.name, value) is not value:
                raise ValueError(f"two metrics are named {value.name!r} (one is in "
                                 f"{module.name}): a metric's name is its asset key")
    return tuple(sorted(found.values(), key=lambda spec: (spec.order, spec.name)))


# In leaderboard column order and report section order.
METRICS: tuple[MetricSpec[Any], ...] = _discovered()

__all__ = ["METRICS", "MetricSpec"]
