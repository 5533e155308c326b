"""The condition evaluations' one read of the dynamic partitions."""

from __future__ import annotations

from dagster import DagsterInstance

from eval_assets.defs.local.conditions import partitions_read_once


def test_partitions_are_read_once_inside_the_block_and_fresh_after() -> None:
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("recordings", ["a"])
        with partitions_read_once(instance):
            assert list(instance.get_dynamic_partitions("recordings")) == ["a"]
            instance.add_dynamic_partitions("recordings", ["b"])
            # The first answer stands for the whole evaluation.
            assert list(instance.get_dynamic_partitions("recordings")) == ["a"]
        assert list(instance.get_dynamic_partitions("recordings")) == ["a", "b"]
