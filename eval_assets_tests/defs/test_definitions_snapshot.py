"""The code location as a reviewed diff, in the style of dagster-open-platform's ``test_defs.py``.

Every asset key with its deps (and partition mappings), group, partitions, code version,
automation condition, owners and kinds; every asset check, job, schedule, sensor and resource;
compared with the committed ``snapshots/definitions.json``. A change to the graph fails here until
the snapshot is regenerated and the diff reviewed, by one command (a new metric needs it too):

    make snapshots

which runs
``EVAL_ASSETS_UPDATE_SNAPSHOTS=1 pytest eval_assets_tests/defs/test_definitions_snapshot.py``.

The model partitions' keys come from the models file, so they are described by kind only.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from dagster import (
    AssetKey,
    AutomationCondition,
    Definitions,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    MultiToSingleDimensionPartitionMapping,
    PartitionMapping,
    PartitionsDefinition,
)

from eval_assets.defs.definitions import defs

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "definitions.json"
UPDATE_ENV = "EVAL_ASSETS_UPDATE_SNAPSHOTS"
_OPERATORS = {"OR": " | ", "AND": " & "}


def condition_text(condition: AutomationCondition[Any] | None) -> str | None:
    """A condition as one line: Dagster's named conditions by name (``eager()``), ours expanded
    under their label (``[label] ...``), operators as written in Python."""
    if condition is None:
        return None
    label = condition.get_label()
    if label and label.isidentifier():  # Dagster's own building blocks are named like functions
        return f"{label}()"
    parts = [condition_text(child) or "" for child in condition.children]
    name = condition.name
    if name in _OPERATORS:
        text = "(" + _OPERATORS[name].join(parts) + ")"
    elif name == "NOT":
        text = f"~{parts[0]}"
    elif name == "SINCE":
        text = f"{parts[0]}.since({parts[1]})"
    else:
        text = f"{name.lower()}({', '.join(parts)})"
    return f"[{label}] {text}" if label else text


def partitions_text(partitions: PartitionsDefinition[Any] | None) -> str | None:
    """``dynamic 'recordings'``, ``static``, or the dimensions of a multi-partition."""
    if partitions is None:
        return None
    if isinstance(partitions, MultiPartitionsDefinition):
        return " × ".join(f"{dim.name}: {partitions_text(dim.partitions_def)}"
                          for dim in partitions.partitions_defs)
    if isinstance(partitions, DynamicPartitionsDefinition):
        return f"dynamic {partitions.name!r}"
    return type(partitions).__name__.removesuffix("PartitionsDefinition").lower()


def _mapping_text(mapping: PartitionMapping) -> str:
    if isinstance(mapping, MultiToSingleDimensionPartitionMapping):
        return f"one dimension: {mapping.partition_dimension_name}"
    return type(mapping).__name__


def _dep_text(parent: AssetKey, mappings: dict[AssetKey, PartitionMapping]) -> str:
    mapping = mappings.get(parent)
    name = parent.to_user_string()
    return name if mapping is None else f"{name} ({_mapping_text(mapping)})"


def describe(definitions: Definitions) -> dict[str, Any]:
    """Everything the snapshot holds, as plain JSON data in a stable order."""
    graph = definitions.resolve_asset_graph()
    assets = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "deps": sorted(_dep_text(p, dict(node.partition_mappings)) for p in node.parent_keys),
            "group": node.group_name,
            "partitions": partitions_text(node.partitions_def),
            "code_version": node.code_version,
            "automation_condition": condition_text(node.automation_condition),
            "kind": "observed" if node.is_observable else "materialized",
            "owners": sorted(node.owners),
            "kinds": sorted(node.kinds),
            "checks": sorted(k.name for k in node.check_keys),
        }
    checks = {}
    for check_key in graph.asset_check_keys:
        check = graph.get(check_key)
        checks[check_key.to_user_string()] = {
            "blocking": check.blocking, "partitions": partitions_text(check.partitions_def)}
    jobs = {job.name: {"assets": sorted(k.to_user_string()
                                        for k in job.asset_layer.selected_asset_keys)}
            for job in definitions.resolve_all_job_defs() if not job.name.startswith("__")}
    schedules = {}
    for schedule in definitions.schedules or []:
        schedule_def = definitions.resolve_schedule_def(schedule.name)
        schedules[schedule_def.name] = {
            "cron": schedule_def.cron_schedule, "timezone": schedule_def.execution_timezone,
            "job": schedule_def.job_name, "default_status": schedule_def.default_status.value}
    sensors = {}
    for sensor in definitions.sensors or []:
        sensor_def = definitions.resolve_sensor_def(sensor.name)
        sensors[sensor_def.name] = {
            "type": sensor_def.sensor_type.value,
            "minimum_interval_s": sensor_def.minimum_interval_seconds,
            "default_status": sensor_def.default_status.value}
    resources = {name: type(resource).__name__
                 for name, resource in (definitions.resources or {}).items()}
    return {"assets": assets, "asset_checks": checks, "jobs": jobs, "schedules": schedules,
            "sensors": sensors, "resources": resources}


def test_the_definitions_match_the_committed_snapshot() -> None:
    current = json.dumps(describe(defs), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get(UPDATE_ENV):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    committed = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.is_file() else ""
    diff = "".join(difflib.unified_diff(committed.splitlines(keepends=True),
                                        current.splitlines(keepends=True),
                                        "snapshots/definitions.json", "the code location"))
    assert not diff, (f"the definitions changed; review the diff, then regenerate with "
                      f"`make snapshots` ({UPDATE_ENV}=1 pytest {Path(__file__).name}):\n{diff}")


def test_the_condition_text_names_dagster_blocks_and_expands_ours() -> None:
    ours = (AutomationCondition.eager() | ~AutomationCondition.in_progress()).with_label("my rule")
    assert condition_text(ours) == "[my rule] (eager() | ~in_progress())"
    assert condition_text(AutomationCondition.missing()) == "missing()"
    assert condition_text(None) is None


def test_every_partitioned_asset_is_backfilled_one_partition_per_run() -> None:
    """No backfill policy (Dagster's default: a run per partition) or one of one partition: a run
    spanning several partitions could not be held back by the per-partition run limit. (The
    end-to-end automation test backfills one recording.)"""
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if node.partitions_def is None or not node.is_materializable:
            continue
        policy = node.backfill_policy
        assert policy is None or policy.max_partitions_per_run == 1, (key, policy)


def test_the_named_chains_are_the_graphs_partitions() -> None:
    """``keys.RECORDING_CHAIN`` is every asset computed per recording, in graph order, and
    ``keys.CELL_ASSETS`` every asset computed per (recording, model): tests and automation name
    them from there."""
    from eval_assets.defs import keys

    graph = defs.resolve_asset_graph()
    computed = [k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable]
    per_recording = {k for k in computed
                     if isinstance(graph.get(k).partitions_def, DynamicPartitionsDefinition)}
    per_cell = {k for k in computed
                if isinstance(graph.get(k).partitions_def, MultiPartitionsDefinition)}
    assert set(keys.RECORDING_CHAIN) == per_recording
    assert set(keys.CELL_ASSETS) == per_cell
    for chain in (keys.RECORDING_CHAIN, keys.CELL_ASSETS):
        for at, key in enumerate(chain):  # each after its parents in the chain
            assert graph.get(key).parent_keys.isdisjoint(chain[at + 1:]), key
