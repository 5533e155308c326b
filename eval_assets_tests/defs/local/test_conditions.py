"""The in-process evaluation reads each dynamic partitions definition once per evaluation."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance

from eval_assets.defs.local.conditions import partitions_read_once


def test_within_one_evaluation_the_keys_are_read_once_then_storage_again(
        tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        instance.add_dynamic_partitions("recordings", ["alpha"])
        reads: list[str] = []
        storage_read = instance.event_log_storage.get_dynamic_partitions

        def counted(name: str):
            reads.append(name)
            return storage_read(name)

        instance.event_log_storage.get_dynamic_partitions = counted  # type: ignore[method-assign]
        with partitions_read_once(instance):
            assert instance.get_dynamic_partitions("recordings") == ["alpha"]
            # Added by another process mid-evaluation: this evaluation keeps its snapshot.
            instance.add_dynamic_partitions("recordings", ["bravo"])
            assert instance.get_dynamic_partitions("recordings") == ["alpha"]
            assert instance.get_dynamic_partitions("other") == []
            assert instance.get_dynamic_partitions("other") == []
        assert reads == ["recordings", "other"]
        # After the block the instance reads storage again, every call.
        assert instance.get_dynamic_partitions("recordings") == ["alpha", "bravo"]
        assert reads == ["recordings", "other", "recordings"]
