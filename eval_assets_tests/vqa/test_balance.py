"""Choosing a family's cases so no answer dominates, and the record of the answers published."""

from __future__ import annotations

from eval_assets.vqa.balance import answer_balance, describe, select_balanced, take_turns


def _first(item: str) -> str:
    return item[0]


def test_answers_take_turns_in_the_order_each_first_appears() -> None:
    items = ["1a", "1b", "1c", "0a", "1d", "2a", "0b"]
    # 1, 0, 2, then 1, 0, then 1...
    assert [items[i] for i in take_turns(items, _first, 6)] == ["1a", "0a", "2a", "1b", "0b",
                                                                  "1c"]
    assert take_turns(items, _first, 0) == [] and take_turns([], _first, 5) == []


def test_the_cap_takes_every_answer_before_repeating_one_and_keeps_the_input_order() -> None:
    items = ["1a", "1b", "1c", "1d", "1e", "2a", "3a", "0a", "0b"]
    kept, dropped = select_balanced(items, _first, 6)
    assert kept == ["1a", "1b", "2a", "3a", "0a", "0b"] and dropped == []


def test_a_surplus_the_scene_cannot_balance_is_left_out_down_to_half() -> None:
    # Only two cases answer other than "1": four of the six "1" cases would be 75 %.
    items = ["1a", "1b", "1c", "2a", "1d", "1e", "1f", "3a"]
    kept, dropped = select_balanced(items, _first, 12)
    assert kept == ["1a", "1b", "2a", "3a"] and dropped == ["1c", "1d", "1e", "1f"]
    # One answer only: one case is kept (a guess of it would win every other).
    assert select_balanced(["1a", "1b", "1c"], _first, 12) == (["1a"], ["1b", "1c"])
    # Exactly half is allowed.
    assert select_balanced(["1a", "1b", "2a", "3a"], _first, 12) == (["1a", "1b", "2a", "3a"],
                                                                      [])


def test_the_record_counts_answers_most_common_first_and_says_why() -> None:
    record = answer_balance(["back-left", "front-left", "back-left", "back-right"])
    assert record is not None
    assert record.answers == {"back-left": 2, "back-right": 1, "front-left": 1}
    assert (record.n, record.majority, record.majority_share, record.note) == \
        (4, "back-left", 0.5, None)
    left = answer_balance(["1", "2", "3", "1"], left_out=4)
    assert left is not None and left.note is not None and "cannot give more" in left.note
    assert "4 '1' case(s) were left out" in left.note
    # dimOS's families are not chosen for balance: a majority above half is flagged as such.
    dimos = answer_balance(["yes", "yes", "yes", "no"], chosen=False)
    assert dimos is not None and dimos.majority_share == 0.75
    assert dimos.note is not None and "not chosen for balance" in dimos.note
    assert answer_balance(["yes", "yes"], chosen=False).note is None  # type: ignore[union-attr]
    assert answer_balance([]) is None
    line = describe(answer_balance(list("aaabbcdef")), shown=2)  # type: ignore[arg-type]
    assert line == "answers a 3 | b 2 | +4 other answers; most common 33%"
