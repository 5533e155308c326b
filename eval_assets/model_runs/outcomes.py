"""What one reply of a model under test came to: its outcome, the answer text and the reasoning.

Every call gets one outcome (:data:`eval_assets.schemas.chat.Outcome`):

- ``answered``: text was left after the reasoning was taken out;
- ``truncated``: ``finish_reason`` is ``length``, or an opening think tag was never closed (the
  budget ran out while thinking);
- ``refused``: the message has a ``refusal``, or ``finish_reason`` is ``content_filter``;
- ``empty``: nothing is left (no content, or only reasoning);
- the call's failure category otherwise (``server_error`` after retries, ``timeout``, ...).

Truncated and refused replies are the model's answers: they stand and score as wrong, never read
as a choice. Every other outcome is no answer, so the record is failed and a rerun asks again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval_assets.schemas.chat import ChatResult, Outcome


@dataclass(frozen=True)
class Thinking:
    """A reply's content with its inline reasoning taken out."""

    text: str
    reasoning: str | None
    unclosed: bool


def strip_thinking(content: str, tags: Sequence[tuple[str, str]]) -> Thinking:
    """``content`` without the pairs of ``tags`` and what they held.

    An opening tag with no closing tag after it holds the rest of the reply: ``unclosed``.
    """
    text, thoughts, unclosed = content, [], False
    for opening, closing in tags:
        kept: list[str] = []
        rest = text
        while (start := rest.find(opening)) >= 0:
            kept.append(rest[:start])
            end = rest.find(closing, start + len(opening))
            if end < 0:
                thoughts.append(rest[start + len(opening):])
                rest, unclosed = "", True
                break
            thoughts.append(rest[start + len(opening):end])
            rest = rest[end + len(closing):]
        text = "".join(kept) + rest
    reasoning = "\n".join(t.strip() for t in thoughts if t.strip()) or None
    return Thinking(text=text.strip() if thoughts else text, reasoning=reasoning,
                    unclosed=unclosed)


@dataclass(frozen=True)
class Classified:
    """A reply classified: its outcome, the answer text (None: none) and all its reasoning."""

    outcome: Outcome
    text: str | None
    reasoning: str | None

    @property
    def answers(self) -> bool:
        """Whether the reply stands as the model's answer (answered, truncated, refused)."""
        return self.outcome in ("answered", "truncated", "refused")


def classify(result: ChatResult, think_tags: Sequence[tuple[str, str]]) -> Classified:
    """The outcome of one call, its answer text after the thinking, and its reasoning."""
    refused = bool(result.refusal) or result.finish_reason == "content_filter"
    if result.error_category == "empty_response" and refused:
        return Classified("refused", None, result.reasoning)  # a refusal without content
    if not result.ok:
        outcome: Outcome = ("empty" if result.error_category == "empty_response"
                            else result.error_category or "unexpected_error")
        return Classified(outcome, None, result.reasoning)
    thinking = strip_thinking(result.content or "", think_tags)
    reasoning = "\n".join(r for r in (result.reasoning, thinking.reasoning) if r) or None
    if refused:
        return Classified("refused", thinking.text or None, reasoning)
    if result.finish_reason == "length" or thinking.unclosed:
        return Classified("truncated", thinking.text or None, reasoning)
    if not thinking.text.strip():
        return Classified("empty", None, reasoning)
    return Classified("answered", thinking.text, reasoning)
