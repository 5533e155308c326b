"""A spending limit for a run: refuse the next call when it could take the run over budget.

Before each call is started the budget reserves what it could cost: the mean prompt cost of the
calls settled so far plus the most a reply of ``max_tokens`` tokens can cost (the worst case, so
the limit holds whatever the model writes). A call is started only while what was spent, plus
what the calls in flight reserved, plus this reservation stays within the budget; otherwise the
run stops asking (calls in flight finish and are journalled) and the rest is left for a rerun,
which resumes from the journal without repeating a call. The very first call's prompt cost is
unknown, so only its reply is reserved and no other call starts until it has settled (a second
call reserved that way could still be in flight when the budget is reached, and overrun it); a
budget smaller than one prompt can still be overrun by that first call.

Every call counts: the run's ledger (:mod:`eval_assets.model_runs.ledger`) tells the budget of
each call as the one chat client completes it (:meth:`Budget.count`), whatever it was for: the
preflight's probes, answers, descriptions, rotations, flips, time controls and prompt controls.
Each of the run's stages pulls its calls through :meth:`Budget.gate`; once the budget stopped one
stage, the later ones start nothing and their calls are counted as left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from eval_assets.schemas.chat import TokenUsage
from eval_assets.schemas.cost import BudgetOutcome, CallUsage, Price


class Budget:
    """What one invocation of a run may spend, thread-safe; see the module docstring."""

    def __init__(self, budget_usd: float, price: Price, max_tokens: int) -> None:
        if budget_usd < 0:
            raise ValueError(f"budget_usd is {budget_usd}; it must be at least 0")
        self.budget_usd = budget_usd
        self.price = price
        self._reply_bound = price.max_output_cost(max_tokens)
        self._lock = threading.Lock()
        self._settled_or_freed = threading.Condition(self._lock)
        self._spent = 0.0
        self._prompt_cost = 0.0
        self._settled = 0
        self._reserved = 0.0
        self._calls_left = 0
        self._stopped = False

    @property
    def spent_usd(self) -> float:
        """What the settled calls cost."""
        with self._lock:
            return self._spent

    def estimate(self) -> float:
        """The reservation of the next call: mean prompt cost so far + the longest reply's cost."""
        with self._lock:
            return self._estimate()

    def _estimate(self) -> float:
        mean_prompt = self._prompt_cost / self._settled if self._settled else 0.0
        return mean_prompt + self._reply_bound

    def settle(self, usage: TokenUsage | None, *, batch: bool = False) -> None:
        """Account one finished call's usage (called once the record is journalled); a
        ``batch`` call (answered through the Batch API) at the batch price."""
        prompt_only = TokenUsage(prompt_tokens=usage.prompt_tokens) if usage else None
        with self._lock:
            self._spent += self.price.cost(usage, batch=batch)
            # The mean prompt cost reserves the next *direct* call: counted at the list price.
            self._prompt_cost += self.price.cost(prompt_only)
            self._settled += 1
            self._settled_or_freed.notify_all()

    def spend(self, usage: TokenUsage | None) -> None:
        """Account calls made outside the gate (the preflight's probes, before any case): spent,
        but not a sample of the prompt cost, which reserves the cases' calls."""
        with self._lock:
            self._spent += self.price.cost(usage)
            self._settled_or_freed.notify_all()

    def count(self, call: CallUsage) -> None:
        """Account one call as the run's ledger counted it: a probe is spent only; any other
        call is also a sample of the prompt cost that reserves the next call."""
        if call.kind == "probes":
            self.spend(call.usage)
        else:
            self.settle(call.usage, batch=call.batch)

    def gate(self, tasks: Iterator[Callable[[], None]]) -> Iterator[Callable[[], None]]:
        """``tasks`` while the next one fits the budget; each holds its reservation until done.

        Pulled lazily by the scheduler, so each check sees the calls settled so far. Once the
        budget stopped a stage, a later stage's gate starts nothing: its calls are left too.
        """
        with self._lock:
            if self._stopped:
                self._calls_left += sum(1 for _ in tasks)
                return
        for task in tasks:
            with self._lock:
                # Until a call has settled, the prompt's cost is unknown: one call at a time.
                self._settled_or_freed.wait_for(lambda: self._settled or not self._reserved)
                reservation = self._estimate()
                if self._spent + self._reserved + reservation > self.budget_usd:
                    self._stopped = True
                    self._calls_left += 1 + sum(1 for _ in tasks)
                    return
                self._reserved += reservation
            yield self._holding(task, reservation)

    def _holding(self, task: Callable[[], None], reservation: float) -> Callable[[], None]:
        def run() -> None:
            try:
                task()
            finally:
                with self._lock:
                    self._reserved -= reservation
                    self._settled_or_freed.notify_all()
        return run

    def outcome(self) -> BudgetOutcome:
        """What was spent and what remains, and whether the budget stopped the run."""
        with self._lock:
            return BudgetOutcome(
                budget_usd=self.budget_usd, spent_usd=round(self._spent, 6),
                remaining_usd=round(max(self.budget_usd - self._spent, 0.0), 6),
                stopped=self._stopped, calls_left=self._calls_left)
