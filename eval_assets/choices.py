"""Reading a model's reply as one of a case's fixed choices (shared by the client and the scorer).

A reply is mapped to one of the case's fixed choices by ``match_choice``, in tiers: the exact
choice text, a bare letter (only when the choices were shown lettered), or a reply that starts with
exactly one choice. Anything else is a parse failure. Unlike dimOS we never let "the last choice
mentioned" win: "Yes, there is no doubt" is "yes", not "no".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

Tier = Literal["exact", "letter", "leading"]

_QUOTES = "\"'`“”‘’"
_TRAILING_PUNCT = ".,;:!?…"
_ANSWER_PREFIX = re.compile(r"^(?:final\s+)?answer\s*:\s*")
_LETTER = re.compile(r"^(?:\(([a-z])\)|([a-z])[.)]?)$")


class ChoiceMatch(BaseModel):
    """The choice a reply maps to (None: parse failure) and the tier that matched it."""

    choice: str | None = None
    tier: Tier | None = None

    @property
    def parsed(self) -> bool:
        """Whether the reply mapped to a choice."""
        return self.choice is not None


def normalise_reply(text: str) -> str:
    """Strip, lower-case, drop an optional leading "answer:", surrounding quotes / ``**`` and
    trailing punctuation (repeatedly, so ``**"Yes."**`` becomes ``yes``)."""
    out = text.strip().lower()
    while True:
        before = out
        out = _ANSWER_PREFIX.sub("", out)
        if out.startswith("**"):
            out = out[2:]
        if out.endswith("**"):
            out = out[:-2]
        out = out.lstrip(_QUOTES).rstrip(_QUOTES + _TRAILING_PUNCT).strip()
        if out == before:
            return out


def _boundary(rest: str) -> bool:
    """Whether ``rest`` (what follows a matched choice) starts at a word boundary.

    A punctuation mark counts only when no letter or digit follows it, so the choice "1" does not
    match "1.5 m" or "1-2 m", while "yes, there is" and "50%." are fine.
    """
    if not rest or rest[0].isspace():
        return True
    if rest[0].isalnum() or rest[0] == "_":
        return False
    return len(rest) == 1 or not rest[1].isalnum()


def match_choice(text: str | None, choices: Sequence[str], lettered: bool = False) -> ChoiceMatch:
    """Map a model reply to one of ``choices``; tiers are tried in order exact, letter, leading.

    - exact: the normalised reply equals a normalised choice;
    - letter (only when ``lettered``): "B", "(B)", "B." or "B)" naming an existing choice;
    - leading: the reply starts with a choice followed by a word boundary, longest choice first
      (so "1 to under 2 meters" beats "1").
    Returns ``ChoiceMatch(None, None)`` for a reply that fits none (a parse failure).
    """
    normalised = [normalise_reply(c) for c in choices]
    if len(set(normalised)) != len(normalised):
        raise ValueError(
            f"choices {list(choices)!r} are not distinct after normalisation "
            f"(case, quotes, trailing punctuation); make every choice text unique"
        )
    if text is None:
        return ChoiceMatch()
    reply = normalise_reply(text)
    if not reply:
        return ChoiceMatch()
    for choice, norm in zip(choices, normalised, strict=True):
        if reply == norm:
            return ChoiceMatch(choice=choice, tier="exact")
    if lettered:
        m = _LETTER.match(reply)
        if m:
            index = ord(m.group(1) or m.group(2)) - ord("a")
            if index < len(choices):
                return ChoiceMatch(choice=choices[index], tier="letter")
    by_length = sorted(range(len(choices)), key=lambda i: (-len(normalised[i]), i))
    for i in by_length:
        norm = normalised[i]
        if norm and reply.startswith(norm) and _boundary(reply[len(norm) :]):
            return ChoiceMatch(choice=choices[i], tier="leading")
    return ChoiceMatch()


# FlipEval (mirrored images): "left" and "right" as whole words, either case.
_SIDE = re.compile(r"\b(left|right)\b", re.IGNORECASE)
_SWAP = {"left": "right", "right": "left"}


def flip_text(text: str) -> str:
    """``text`` with the whole words "left" and "right" swapped, keeping their capitals: what
    mirroring the image does to a left/right question, choice or answer."""
    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        other = _SWAP[word.lower()]
        if word.isupper():
            return other.upper()
        return other.capitalize() if word[0].isupper() else other
    return _SIDE.sub(swap, text)


def is_left_right(choices: Sequence[str]) -> bool:
    """Whether choices name left or right and swapping the two words maps them onto themselves
    (so a mirrored case keeps the same choices)."""
    return (any(_SIDE.search(c) for c in choices)
            and sorted(flip_text(c) for c in choices) == sorted(choices))
