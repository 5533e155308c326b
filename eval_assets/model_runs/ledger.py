"""Every call a run makes, counted once, where the one chat client sends it: ``usage.jsonl``.

A run's cost used to be priced from its standing records (answers, descriptions, rotations) and
the preflight's probes, and left out everything else the run asked (flips, time controls,
templates, repeats, structured answers) and every superseded try: ``--repeats 3`` reported a
quarter of the server's bill. Now the run attaches a :class:`UsageLedger` to its
:class:`~eval_assets.openai_chat.ChatClient` (:attr:`~eval_assets.openai_chat.ChatClient.meter`),
which is told of every call the client completes whoever asked for it, and journals one
:class:`~eval_assets.schemas.cost.CallUsage` line per call (fsynced, like the answers' journals):
the tokens the reply's ``usage`` says were billed, and what the call was for. Calls answered
through the Batch API never pass the chat client; the runner counts them with
:meth:`UsageLedger.count`. The run's cost (:func:`ledger_cost`) sums the file, every invocation
of the run folder, so it equals what the server billed; a budget
(:mod:`eval_assets.model_runs.budget`) is told of each call as it is counted.

What a call was for: the kind the caller declared with :func:`calling` (a context variable, set
around one task in its worker thread), else the ledger's current :meth:`UsageLedger.phase` (the
runner's stages run one after the other), else ``other`` (still counted).

A run folder made before this file existed gets it from its journals once (each journalled record
is one call, with its usage; the probes from ``endpoint.json``), marked ``backfilled``.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from eval_assets.journal import Journal
from eval_assets.layout import (
    RUN_ANSWERS_JOURNAL,
    RUN_DESCRIPTIONS_JOURNAL,
    RUN_ENDPOINT,
    RUN_FLIPS_JOURNAL,
    RUN_REPEAT_FRAMES_JOURNAL,
    RUN_REPEATS_JOURNAL,
    RUN_ROTATIONS_JOURNAL,
    RUN_STRUCTURED_JOURNAL,
    RUN_TEMPLATES_JOURNAL,
    RUN_TIME_FLIPS_JOURNAL,
    RUN_USAGE,
)
from eval_assets.model_runs.budget import Budget
from eval_assets.schemas.chat import ChatResult, TokenUsage
from eval_assets.schemas.cost import BudgetOutcome, CallKind, CallUsage, KindCost, Price, RunCost

__all__ = ["OTHER", "PROBES", "UsageLedger", "batch_counted", "calling", "counted_as",
           "counting", "ledger_cost"]

OTHER: CallKind = "other"
PROBES: CallKind = "probes"

_KIND: ContextVar[CallKind | None] = ContextVar("eval_assets_call_kind", default=None)
R = TypeVar("R", bound=BaseModel)

# The journals of a run folder and the kind of call each records (for the backfill).
_JOURNAL_KINDS: tuple[tuple[str, CallKind], ...] = (
    (RUN_ANSWERS_JOURNAL, "answers"), (RUN_DESCRIPTIONS_JOURNAL, "descriptions"),
    (RUN_ROTATIONS_JOURNAL, "rotations"), (RUN_FLIPS_JOURNAL, "flips"),
    (RUN_TIME_FLIPS_JOURNAL, "time_flip"), (RUN_REPEAT_FRAMES_JOURNAL, "repeat_frames"),
    (RUN_TEMPLATES_JOURNAL, "templates"), (RUN_REPEATS_JOURNAL, "repeats"),
    (RUN_STRUCTURED_JOURNAL, "structured"))


@contextlib.contextmanager
def calling(kind: CallKind) -> Iterator[None]:
    """Declare what the calls made in this block (this thread) are for."""
    token = _KIND.set(kind)
    try:
        yield
    finally:
        _KIND.reset(token)


def counted_as(kind: CallKind, task: Callable[[], None]) -> Callable[[], None]:
    """``task``, its calls counted as ``kind`` (it runs in a worker thread: the kind is set
    there)."""
    def run() -> None:
        with calling(kind):
            task()
    return run


class _Usage(BaseModel):
    """What the backfill reads of any journalled record."""

    usage: TokenUsage | None = None
    batch: bool = False
    attempts: int = 1


class UsageLedger:
    """The run folder's ``usage.jsonl``: one line per call, thread-safe; a context manager.

    ``on_call`` is told of each call counted by this invocation (a budget's
    :meth:`~eval_assets.model_runs.budget.Budget.count`).
    """

    def __init__(self, run_dir: Path, on_call: Callable[[CallUsage], None] | None = None) -> None:
        self.path = Path(run_dir) / RUN_USAGE
        fresh = not self.path.exists()
        self._journal = Journal(self.path, CallUsage, key=lambda record: record.id)
        self._on_call = on_call
        self._phase: CallKind = OTHER
        self._lock = threading.Lock()
        self._counted: list[CallUsage] = []
        if fresh:
            for record in _backfill(Path(run_dir)):
                self._journal.append(record)

    def __enter__(self) -> UsageLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (every line is already on disk)."""
        self._journal.close()

    @contextlib.contextmanager
    def phase(self, kind: CallKind) -> Iterator[None]:
        """Count the calls of this block as ``kind`` unless a task says otherwise
        (:func:`calling`)."""
        previous, self._phase = self._phase, kind
        try:
            yield
        finally:
            self._phase = previous

    def __call__(self, result: ChatResult) -> None:
        """The chat client's meter: count one completed call."""
        self.count(None, result.usage, attempts=result.attempts, status_code=result.status_code)

    def count(self, kind: CallKind | None, usage: TokenUsage | None, *, batch: bool = False,
              attempts: int = 1, status_code: int | None = None) -> CallUsage:
        """Journal one call (``kind`` None: the declared or current kind) and tell ``on_call``."""
        record = CallUsage(id=uuid.uuid4().hex, kind=kind or _KIND.get() or self._phase,
                           usage=usage, batch=batch, attempts=attempts, status_code=status_code)
        self._journal.append(record)
        with self._lock:
            self._counted.append(record)
        if self._on_call is not None:
            self._on_call(record)
        return record

    def records(self) -> list[CallUsage]:
        """Every call of the run folder, earlier invocations' included."""
        return self._journal.records()

    def counted(self) -> list[CallUsage]:
        """The calls this invocation counted."""
        with self._lock:
            return list(self._counted)


def _backfill(run_dir: Path) -> list[CallUsage]:
    """One line per journalled call of a run folder made before ``usage.jsonl`` (and the
    probes of its ``endpoint.json``): none for a new folder."""
    out: list[CallUsage] = []
    for name, kind in _JOURNAL_KINDS:
        path = run_dir / name
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = _Usage.model_validate_json(line)
            except ValidationError:
                continue  # a blank or torn line, which the journal drops too
            out.append(CallUsage(id=uuid.uuid4().hex, kind=kind, usage=record.usage,
                                 batch=record.batch, attempts=record.attempts, backfilled=True))
    endpoint = run_dir / RUN_ENDPOINT
    if out and endpoint.is_file():
        try:
            probes = _Usage.model_validate_json(endpoint.read_text(encoding="utf-8")).usage
        except ValidationError:
            probes = None
        if probes is not None:
            out.append(CallUsage(id=uuid.uuid4().hex, kind=PROBES, usage=probes,
                                 backfilled=True))
    return out


def ledger_cost(price: Price | None, calls: list[CallUsage],
                budget: BudgetOutcome | None = None) -> RunCost | None:
    """What ``calls`` cost at ``price``, by kind; None without a price (no price is not $0)."""
    if price is None:
        return None
    kinds: dict[CallKind, KindCost] = {}
    for call in calls:
        was = kinds.get(call.kind, KindCost(calls=0, prompt_tokens=0, completion_tokens=0,
                                            usd=0.0))
        usage = call.usage
        kinds[call.kind] = KindCost(
            calls=was.calls + 1,
            prompt_tokens=was.prompt_tokens + ((usage.prompt_tokens or 0) if usage else 0),
            completion_tokens=was.completion_tokens + (
                (usage.completion_tokens or 0) if usage else 0),
            usd=was.usd + price.cost(usage, batch=call.batch))
    by_kind = {k: v.model_copy(update={"usd": round(v.usd, 6)}) for k, v in sorted(kinds.items())}

    def usd(kind: CallKind) -> float | None:
        return by_kind[kind].usd if kind in by_kind else None

    batched = sum(1 for call in calls if call.batch)
    return RunCost(price=price, answers_usd=usd("answers") or 0.0,
                   descriptions_usd=usd("descriptions"), rotations_usd=usd("rotations"),
                   probes_usd=usd(PROBES),
                   total_usd=round(sum(v.usd for v in kinds.values()), 6), by_kind=by_kind,
                   budget=budget, batch_calls=batched or None)


@contextlib.contextmanager
def counting(client: object, run_dir: Path, budget: Budget | None) -> Iterator[UsageLedger]:
    """The run folder's ledger, told of every call ``client`` completes meanwhile (its
    ``metered``: :meth:`eval_assets.model_runs.client.OpenAIVLMClient.metered`), and telling
    ``budget`` of each."""
    with UsageLedger(run_dir, on_call=budget.count if budget is not None else None) as ledger:
        metered = getattr(client, "metered", None)
        with contextlib.nullcontext() if metered is None else metered(ledger):
            yield ledger


# What a batch item's kind is counted as.
_BATCH_KINDS: dict[str, CallKind] = {"answer": "answers", "rotation": "rotations",
                                     "description": "descriptions"}


def batch_counted(ledger: UsageLedger, kind: str, record: R) -> R:
    """A record answered through the Batch API, marked as such (billed at the batch price) and
    counted: it never passed the chat client, so the ledger is told here, once."""
    ledger.count(_BATCH_KINDS[kind], getattr(record, "usage", None), batch=True)
    return record.model_copy(update={"batch": True})
