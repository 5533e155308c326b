"""Partitions already missing when the daemon starts are materialized, once.

Dagster's ``eager()`` counts its first evaluation as "handled", so a partition missing then was
never materialized until something upstream changed. Evaluated here as the daemon's automation
sensor does, on a real instance.
"""

from __future__ import annotations

import pytest
from dagster import AssetObservation, DagsterInstance
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from eval_assets.defs import keys
from eval_assets.defs.local.conditions import Conditions


def _requested(result) -> dict:
    from eval_assets.defs.definitions import defs

    graph = defs.resolve_asset_graph()
    return {key: result.get_requested_partitions(key) for key in graph.materializable_asset_keys
            if result.get_num_requested(key)}


@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_missing_at_the_first_evaluation_is_requested_once() -> None:
    from eval_assets.defs.definitions import defs

    with DagsterInstance.ephemeral() as instance:
        # Registered and observed while no daemon ran (or before its cursor existed).
        instance.add_dynamic_partitions("recordings", ["alpha"])
        instance.report_runless_asset_event(AssetObservation(
            asset_key=keys.RECORDING_FILE, partition="alpha", tags={DATA_VERSION_TAG: "v1"}))
        conditions = Conditions(defs, instance)

        first = conditions.evaluate()
        requested = _requested(first)
        assert set(requested) == set(keys.RECORDING_CHAIN), requested
        assert all(partitions == {"alpha"} for partitions in requested.values())

        # Requested once: the next evaluation, nothing having happened, asks for nothing.
        assert _requested(conditions.evaluate(first.cursor)) == {}
