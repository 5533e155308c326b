"""Answers a guess cannot win: choosing a family's cases so that no one answer dominates, and
recording each family's answer distribution.

A family whose gold answers are mostly one value is scored by guessing that value (13 unseen
synthesized recordings, scene seeds 1001-1013, gave ``object_count_across_frames`` 85 golds of
"1" in 101: always answering "1" scored 84 %). The generators first offer cases of every answer
the scene allows (other objects, frames and reference frames); :func:`select_balanced` then
takes them answer by answer in turn, and, only where the scene gives too few cases of the other
answers, leaves out the surplus of the most common one, so that no answer is more than half of a
family's cases (:data:`MAX_MAJORITY_SHARE`). :func:`answer_balance` is the record of what was
published, with a note when the scene could not give more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from eval_assets.schemas.vqa import AnswerBalance

__all__ = ["MAX_MAJORITY_SHARE", "AnswerBalance", "answer_balance", "describe",
           "select_balanced", "take_turns"]

# No answer may be more than this share of a family's cases.
MAX_MAJORITY_SHARE = 0.5
# A family with fewer cases than this has no share target (two cases of one answer are 100 %).
MIN_CASES_FOR_TARGET = 3

T = TypeVar("T")


def take_turns(items: Sequence[T], answer: Callable[[T], str], cap: int) -> list[int]:
    """Indices of at most ``cap`` of ``items``, the answers taking turns: each answer's items
    queue in ``items`` order, the answers in the order each first appears (the first of every
    answer, then the second of every answer, ...). Returned in the order taken."""
    queues: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        queues.setdefault(answer(item), []).append(i)
    taken: list[int] = []
    depth = 0
    while len(taken) < cap and any(depth < len(q) for q in queues.values()):
        for q in queues.values():
            if depth < len(q) and len(taken) < cap:
                taken.append(q[depth])
        depth += 1
    return taken


def select_balanced(items: Sequence[T], answer: Callable[[T], str], cap: int
                    ) -> tuple[list[T], list[T]]:
    """At most ``cap`` of ``items`` (in their order), taken one answer at a time, and the items
    left out to keep any answer at most half of those kept.

    The answers take turns (:func:`take_turns`): a scene offering three answers gives a third
    of the cases each until one runs out. Only when every other answer has run out can the
    turns leave one answer above half; its last-taken items are then left out (returned
    second), down to as many as all the other answers together (at least one), so a guess of it
    cannot score more than 50 %.
    Deterministic: the result depends on ``items``' order and answers only.
    """
    taken = take_turns(items, answer, cap)
    counts = Counter(answer(items[i]) for i in taken)
    dropped: list[int] = []
    if counts:
        top, most = max(counts.items(), key=lambda kv: kv[1])
        allowed = max(len(taken) - most, 1)
        if most > allowed:
            # ``taken`` lists the top answer's items in queue order: leave out its last ones.
            mine = [i for i in taken if answer(items[i]) == top]
            dropped = mine[allowed:]
    kept = sorted(set(taken) - set(dropped))
    return [items[i] for i in kept], [items[i] for i in sorted(dropped)]


def answer_balance(answers: Iterable[str], left_out: int = 0,
                   chosen: bool = True) -> AnswerBalance | None:
    """The record of a family's published ``answers`` (None when there are none).

    ``left_out``: cases of the most common answer :func:`select_balanced` left out (the note
    then says the scene could not give more); ``chosen=False``: the family's cases are not
    chosen for balance (dimOS's families ask what the author proposed), which the note says
    where one answer is above :data:`MAX_MAJORITY_SHARE` of three or more cases.
    """
    counts = Counter(answers)
    if not counts:
        return None
    ranked = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    majority, most = next(iter(ranked.items()))
    n = sum(ranked.values())
    share = most / n
    note = None
    if left_out:
        note = (f"the scene cannot give more: only {n - most} case(s) answer other than "
                f"{majority!r}, so {left_out} {majority!r} case(s) were left out")
    elif not chosen and share > MAX_MAJORITY_SHARE and n >= MIN_CASES_FOR_TARGET:
        note = "above half: the author's proposals decide these cases (not chosen for balance)"
    return AnswerBalance(n=n, answers=ranked, majority=majority,
                         majority_share=round(share, 4), left_out=left_out, note=note)


def describe(balance: AnswerBalance, shown: int = 4) -> str:
    """One line for the CLI: the ``shown`` most common answers with their counts, the most common
    one's share and the note."""
    parts = [f"{a} {k}" for a, k in list(balance.answers.items())[:shown]]
    rest = len(balance.answers) - shown
    if rest > 0:
        parts.append(f"+{rest} other answers")
    # " | " between answers: an order answer holds commas ("red ball, blue box").
    line = f"answers {' | '.join(parts)}; most common {balance.majority_share:.0%}"
    return line + (f"; {balance.note}" if balance.note else "")
