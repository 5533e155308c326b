"""The adaptive concurrency limit's history of a run (``summary.json`` field ``concurrency``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LimitChange(BaseModel):
    """One change of the limit: when (seconds since the run started), to what, and why."""

    model_config = ConfigDict(frozen=True)

    t_s: float
    limit: int
    reason: str = Field(description="start, slow_start, increase, retry_episode, latency")


class ConcurrencyHistory(BaseModel):
    """The limit's history of one run, for ``summary.json`` and the report."""

    model_config = ConfigDict(frozen=True)

    cap: int
    final_limit: int
    max_limit: int
    retry_episodes: int
    latency_backoffs: int
    paced_by_headers: bool
    baseline_latency_s: float | None
    changes: list[LimitChange]
