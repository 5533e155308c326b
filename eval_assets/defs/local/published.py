"""Published means verified, in ``eval-assets run``: before anything else, every published dataset,
results file, the leaderboard and the report are compared by content with what their assets
published (:mod:`eval_assets.publication`). A damaged or edited file that this run owns (its
recording's dataset, its models' results, the board) is named and rebuilt from its inputs by
materializing the assets that wrote it; one it does not own (another recording's, another
model's) is named and the run refuses, saying the command that rebuilds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dagster import AssetKey, MultiPartitionKey

from eval_assets.defs.local.plan import Partition, Plan, Scope
from eval_assets.defs.partitions import MODEL_DIM, RECORDING_DIM
from eval_assets.errors import InputError
from eval_assets.layout import StorageLayout
from eval_assets.publication import Damage, adopt_unrecorded, verify_publications
from eval_assets.schemas.publication import Publication

__all__ = ["PublishedFilesDamaged", "published_repairs"]


class PublishedFilesDamaged(InputError):
    """Published files this run does not own are not as published; the message names each and
    the command that rebuilds it."""


def _partition(record: Publication) -> Partition:
    if record.recording is None:
        return None
    if record.model is None:
        return record.recording
    return MultiPartitionKey({RECORDING_DIM: record.recording, MODEL_DIM: record.model})


def _rebuild(record: Publication) -> str:
    return f"{', '.join(record.assets)}{record.partition_text()}"


def _command(record: Publication) -> str:
    model = f" --model {record.model}" if record.model is not None else ""
    return (f"`eval-assets run <{record.recording}'s recording file>{model}` (it rebuilds "
            f"{_rebuild(record)} from its inputs)")


def published_repairs(layout: StorageLayout, scope: Scope,
                      on_stage: Callable[[str], None]) -> Plan:
    """What this run rebuilds because it was damaged after publication (each named to
    ``on_stage``); raises :class:`PublishedFilesDamaged` naming the damaged files of other
    recordings or models, and the fix, before anything runs. Outputs published before records
    were kept are recorded first, as found."""
    adopt_unrecorded(layout)
    damaged = verify_publications(layout)
    owned = scope.partitions()
    plan = Plan()
    outside: list[Damage] = []
    for damage in damaged:
        partition = _partition(damage.record)
        if partition not in owned:
            outside.append(damage)
            continue
        on_stage(f"published file {damage.describe()}; rebuilding {_rebuild(damage.record)} "
                 "from its inputs")
        for asset in damage.record.assets:
            plan.add(AssetKey(asset), partition, scope)
    if outside:
        raise PublishedFilesDamaged(_refusal(outside))
    return plan


def _refusal(damaged: Sequence[Damage]) -> str:
    lines = [f"  {d.describe()}" for d in damaged]
    fixes = sorted({_command(d.record) for d in damaged})
    return ("published files of other recordings or models are not as published; the "
            "leaderboard and report would be built from them:\n" + "\n".join(lines)
            + "\nFix: run " + "; run ".join(fixes) + ", then this command again.")
