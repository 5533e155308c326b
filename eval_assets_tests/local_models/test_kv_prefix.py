"""Greedy free text with drafted tokens (:meth:`ForcedPrefix.greedy`, :func:`lookup_draft`)."""

from __future__ import annotations

from typing import Any

import pytest

from eval_assets.local_models.kv_prefix import lookup_draft
from eval_assets.local_models.smollm2 import BlindSmolLM2


def test_a_draft_continues_the_longest_tail_found_in_the_context_first() -> None:
    # "7 8" occurred earlier in the context: what followed it there is the draft.
    assert lookup_draft([5, 7, 8, 9, 10, 11, 3, 7, 8], [], 3) == [9, 10, 11]
    # Cut at the limit, and at the end of the source.
    assert lookup_draft([5, 7, 8, 9, 10, 11, 3, 7, 8], [], 2) == [9, 10]
    assert lookup_draft([1, 2, 3, 1, 2], [], 5) == [3, 1, 2]
    # The latest occurrence wins.
    assert lookup_draft([4, 1, 5, 4, 1, 6, 0, 4, 1], [], 1) == [6]


def test_a_draft_falls_back_to_the_sources_then_to_shorter_tails() -> None:
    recent = [[20, 21, 22, 23], [30, 21, 22, 99]]
    # Not in the context: the first source holding the tail (most recent first) gives the draft.
    assert lookup_draft([1, 21, 22], recent, 2) == [23]
    # A three-token tail found nowhere: the longest shorter one that is.
    assert lookup_draft([9, 8, 22], recent, 2) == [23]
    assert lookup_draft([9, 8, 7], recent, 2) == []
    assert lookup_draft([1, 2], recent, 0) == []


class _Counting:
    """The model, counting its forward passes."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.passes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.passes += 1
        return self.model(*args, **kwargs)


@pytest.mark.slow
def test_drafted_greedy_text_is_what_generate_picks_in_fewer_passes() -> None:
    """Free-text prompts of the demo (their replies echo the question and each other): the same
    tokens as ``generate(do_sample=False)``, end token and limit included, in fewer passes."""
    model = BlindSmolLM2()
    asks = [("How many different blue box objects appear across these images? The same object "
             "seen in several images counts once.\nAnswer with a single number.", 64),
            ("How many different red ball objects appear across these images? The same object "
             "seen in several images counts once.\nAnswer with a single number.", 64),
            ("What is the median distance from the camera to the visible surface of the yellow "
             "box, in metres?\nAnswer with a single number in metres (m).", 64),
            ("Describe what you observe in this frame.", 12)]
    counting = _Counting(model._model)
    tokens = 0
    for question, limit in asks:
        chat = [{"role": "system", "content": "Answer the question using only the provided "
                 "observations."}, {"role": "user", "content": question}]
        encoded: Any = model._tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        prompt = encoded["input_ids"]
        with model._torch.no_grad():
            expected = model._model.generate(
                prompt, attention_mask=encoded["attention_mask"], max_new_tokens=limit,
                do_sample=False, pad_token_id=model._tokenizer.eos_token_id)[0][prompt.shape[1]:]
            model._model = counting
            try:
                reply = model._generate(prompt, limit)
            finally:
                model._model = counting.model
        assert model._recent[0][prompt.shape[1]:] == expected.tolist()
        assert reply.completion_tokens == len(expected) <= limit
        assert reply.text == model._tokenizer.decode(expected, skip_special_tokens=True).strip()
        tokens += len(expected)
    # One pass per prompt feeds it; the tokens took fewer than one pass each.
    assert counting.passes - len(asks) < 0.8 * tokens
