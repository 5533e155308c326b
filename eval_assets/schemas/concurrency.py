"""The adaptive concurrency limit's history of a run (``summary.json`` field ``concurrency``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LimitChange(BaseModel):
    """One change of the limit: when (seconds since the run started), to what, and why."""

    model_config = ConfigDict(frozen=True)

    t_s: float
    limit: int
    reason: str = Field(description="start, resumed (from what an earlier call group of the "
                        "endpoint learnt), slow_start, increase, throughput, retry_episode, "
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
        None, description="the rate a limiter without pacing headers was last found to allow, "
        "at 95 % of which starts were then paced")
    rate_limit_blocks: int = Field(
        0, description="times a 429 without Retry-After stopped starts until a probe passed")
    rate_cuts: int = Field(
        0, description="times a 429 from a limiter naming no rate cut the pace of starts to "
        "95 % of the rate it was seen to allow")
    baseline_latency_s: float | None
    changes: list[LimitChange]
