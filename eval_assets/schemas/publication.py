"""A publication record: what one materialization of an asset published, by content
(``<storage root>/state/publications/...``, :mod:`eval_assets.publication`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Publication(BaseModel):
    """The files one asset partition published, each with its SHA-256 as published."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    assets: list[str] = Field(
        description="the assets whose materialization writes these files (a multi-asset: all "
        "its keys): what rebuilds them from their inputs")
    recording: str | None = Field(None, description="the recording partition; None: none")
    model: str | None = Field(None, description="the model of a (recording, model) cell")
    files: dict[str, str] = Field(
        description="each published file, relative to the storage root, and its SHA-256")
    lines: dict[str, list[str]] = Field(
        default_factory=dict, description="of each JSON Lines file, its lines' SHA-256 (16 hex "
        "digits each), so that an edit is named by its lines")
    folders: list[str] = Field(
        default_factory=list, description="folders published whole (relative to the storage "
        "root): a file in one that is not in `files` was added after publication")
    adopted: bool = Field(
        False, exclude_if=lambda v: not v,
        description="recorded by a check, from the files as found (published before records "
        "were kept), not by the asset itself")

    def partition_text(self) -> str:
        """``[rec]``, ``[rec, model]``, or nothing for an unpartitioned asset."""
        parts = [p for p in (self.recording, self.model) if p is not None]
        return f" [{', '.join(parts)}]" if parts else ""
