"""The adaptive concurrency limit's history of a run (``summary.json`` field ``concurrency``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LimitChange(BaseModel):
    """One change of the limit: when (seconds since the run started), to what, and why."""

    model_config = ConfigDict(frozen=True)

    t_s: float
    limit: int
    reason: str = Field(description="start, slow_start, increase, throughput, retry_episode, "
                        "latency, server_errors, rate_learned")


class ConcurrencyHistory(BaseModel):
    """The limit's history of one run, for ``summary.json`` and the report."""

    model_config = ConfigDict(frozen=True)

    cap: int
    final_limit: int
    max_limit: int
    retry_episodes: int
    latency_backoffs: int
    paced_by_headers: bool
    error_backoffs: int = Field(0, description="cuts for 5xx whose share grew with the limit")
    learned_rate_per_s: float | None = Field(
        None, description="the rate a limiter without pacing headers was found to allow, at "
        "which starts were then paced")
    rate_limit_blocks: int = Field(
        0, description="times a 429 without Retry-After stopped starts until a probe passed")
    baseline_latency_s: float | None
    changes: list[LimitChange]
