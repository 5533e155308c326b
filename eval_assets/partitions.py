"""Partition definitions: one dynamic partition per recording file stem."""

from __future__ import annotations

from dagster import DynamicPartitionsDefinition

recordings_partitions = DynamicPartitionsDefinition(name="recordings")
