"""What a model's tokens cost, and what a run spent.

A :class:`Price` is written in the models file beside an entry's endpoint fields (``price:
{input_per_m: 0.15, output_per_m: 0.6}``); a model without one has no cost, shown as "no price
set", never as $0. Prices are US dollars per million tokens, as providers publish them. A call
answered through the Batch API (:mod:`eval_assets.model_runs.batch`) costs ``batch_factor`` of
that price (:data:`BATCH_FACTOR`, half, unless the entry says otherwise).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.schemas.chat import TokenUsage

CallKind = str
"""What a call was for: ``answers`` (dimOS's and the spatial cases), ``descriptions``,
``rotations``, ``flips``, ``time_flip``, ``repeat_frames``, ``templates``, ``repeats``,
``structured``, ``probes`` (the capability preflight), or ``other`` (a call made outside any of
them: still counted)."""

NO_PRICE = "no price set"
BATCH_FACTOR = 0.5
"""Share of the list price a Batch API call costs: OpenAI's published batch discount (50 %)."""


class Price(BaseModel):
    """US dollars per million tokens: prompt (input), completion (output), cached prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_m: float = Field(ge=0, description="USD per 1M prompt tokens")
    output_per_m: float = Field(ge=0, description="USD per 1M completion tokens")
    cached_input_per_m: float | None = Field(
        None, ge=0, description="USD per 1M cached prompt tokens; None: the input price")
    # Left out of the dump when unset: the entry's hash (its data version) must not change for
    # every priced model because this field exists.
    batch_factor: float | None = Field(
        None, gt=0, le=1, exclude_if=lambda v: v is None,
        description=f"share of the price a Batch API call costs; None: {BATCH_FACTOR}")

    @property
    def batch_share(self) -> float:
        """What a Batch API call costs as a share of a direct one."""
        return self.batch_factor if self.batch_factor is not None else BATCH_FACTOR

    def cost(self, usage: TokenUsage | None, cached_tokens: int = 0, *,
             batch: bool = False) -> float:
        """The cost of one call's usage (a call without reported usage costs 0 known dollars).

        ``cached_tokens`` of the prompt are charged at the cached price (servers report them
        inside ``prompt_tokens``); a ``batch`` call (answered through the Batch API) costs
        :attr:`batch_share` of it.
        """
        if usage is None:
            return 0.0
        prompt = usage.prompt_tokens or 0
        cached = min(cached_tokens, prompt)
        cached_price = (self.cached_input_per_m if self.cached_input_per_m is not None
                        else self.input_per_m)
        listed = ((prompt - cached) * self.input_per_m + cached * cached_price
                  + (usage.completion_tokens or 0) * self.output_per_m) / 1e6
        return listed * self.batch_share if batch else listed

    def max_output_cost(self, max_tokens: int) -> float:
        """The most one reply of at most ``max_tokens`` tokens can cost."""
        return max_tokens * self.output_per_m / 1e6


class BudgetOutcome(BaseModel):
    """How a run with a budget ended: spent, what was left, whether the budget stopped it."""

    budget_usd: float
    spent_usd: float = Field(description="What this invocation's calls cost, every kind.")
    remaining_usd: float
    stopped: bool = Field(description="Calls were left unasked because the next ones could "
                                      "have exceeded the budget; a rerun continues.")
    calls_left: int = Field(description="Calls not asked by this invocation.")


class CallUsage(BaseModel):
    """One line of a run folder's ``usage.jsonl``: one request as the server answered it, with
    the tokens it billed (``usage`` of the reply; None: it reported none, e.g. an error status).

    Written where the one chat client sends a request (:mod:`eval_assets.model_runs.ledger`), so
    every call of the run is one line whatever it was for."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="unique per line (a call asked twice is two lines)")
    kind: CallKind
    usage: TokenUsage | None = None
    batch: bool = Field(False, description="answered through the Batch API (batch price)")
    attempts: int = Field(1, description="HTTP tries of the call (retries included)")
    status_code: int | None = None
    backfilled: bool = Field(
        False, exclude_if=lambda v: not v,
        description="taken from a journal record of a run made before usage.jsonl existed")


class KindCost(BaseModel):
    """The calls of one kind a run folder's runs made, their tokens and their cost."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    usd: float


class RunCost(BaseModel):
    """What every call of a run folder cost, in USD: each request its runs sent (answers,
    descriptions, rotations, flips, time controls, prompt controls, probes), counted once from
    ``usage.jsonl``, so the total is what the server billed (``by_kind`` splits it)."""

    price: Price
    answers_usd: float
    descriptions_usd: float | None = None
    rotations_usd: float | None = None
    probes_usd: float | None = Field(
        None, exclude_if=lambda v: v is None,
        description="The capability preflight's probes of the run folder's endpoint.json "
                    "(eval_assets.model_runs.preflight), in total_usd; absent without a "
                    "preflight (a local model) or when the server reported no usage.")
    total_usd: float
    by_kind: dict[CallKind, KindCost] = Field(
        default_factory=dict, description="every call by what it was for; sums to total_usd")
    budget: BudgetOutcome | None = None
    batch_calls: int | None = Field(
        None, exclude_if=lambda v: v is None,
        description="Standing records answered through the Batch API, priced at the batch "
                    "price (Price.batch_share); absent when there are none.")
