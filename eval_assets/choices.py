"""Reading a model's reply as one of a case's fixed choices (shared by the client and the scorer).

A reply is mapped to one of the case's fixed choices by ``match_choice``, in tiers: the exact
choice text, a letter (only when the choices were shown lettered: "B", "(B)", "B) no", "The answer
is B) no."), or a reply that starts with exactly one choice. Anything else is a parse failure.
Unlike dimOS we never let "the last choice mentioned" win: "Yes, there is no doubt" is "yes", not
"no"; likewise a lettered reply whose option text contradicts its letter ("B) yes" when B is "no")
or that names two letters ("A) yes B) no") is a parse failure, never a guess.
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
# A lettered reply that goes on after its letter: "(b) no", "b) no", "b. no", "b: no". The letter
# needs its mark here ("b no" is not read), so a reply opening with the article "a" is no letter.
_LETTER_LEAD = re.compile(r"^(?:\(([a-z])\)|([a-z])[.):])\s*")
# What a model may say before its letter ("the answer is", "correct option:", "answer b"); only
# stripped on the lettered path, so the choice-text tiers read replies exactly as before.
_LETTER_PREFIX = re.compile(
    r"^(?:the\s+)?(?:(?:correct|right|best|final)\s+)?(?:answer|option|choice)(?:\s+is)?"
    r"(?:\s*:\s*|\s+)")
# Letters a reply names as options, read on the original text (case kept): "(A)", "A)", or a
# capital after "or" / "and" / "/" ("A or B", "B/C"). Lower-case "a" after "or" is the article.
_NAMED_LETTER = re.compile(
    r"\(([A-Za-z])\)|(?<![A-Za-z0-9])([A-Za-z])\)|(?:\b(?:or|and)\s+|/\s*)([A-Z])(?![A-Za-z0-9])")


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


def _leading(reply: str, normalised: Sequence[str]) -> int | None:
    """Index of the choice ``reply`` starts with (then a word boundary), longest choice first."""
    by_length = sorted(range(len(normalised)), key=lambda i: (-len(normalised[i]), i))
    for i in by_length:
        norm = normalised[i]
        if norm and reply.startswith(norm) and _boundary(reply[len(norm) :]):
            return i
    return None


def _letter_index(text: str, reply: str, normalised: Sequence[str]) -> int | None:
    """Index of the option a lettered reply names, or None (no letter reading, or a reply that
    contradicts itself).

    ``reply`` is the normalised reply, ``text`` the original (its capitals tell "A or B" from
    "or a"). The reply, after an optional "the answer is", is a letter alone ("b", "(b)", "b.",
    "b)") or a marked letter followed by that option's text ("b) no", "(b) no, it is not"). A
    letter followed by anything else (another option's text, "b) yes" when B is "no", or prose
    that names no option) is not read: guessing between the letter and the text would score a
    reply the model did not clearly give. Nor is a reply that names a second letter anywhere
    ("A) yes B) no", "A or B").
    """
    body = _LETTER_PREFIX.sub("", reply, count=1)
    m = _LETTER.match(body)
    rest = ""
    if m is None:
        m = _LETTER_LEAD.match(body)
        if m is None:
            return None
        # Markdown around the letter ("**B)** no") is not part of the option text.
        rest = normalise_reply(body[m.end() :].lstrip("*").strip())
    letter = m.group(1) or m.group(2)
    index = ord(letter) - ord("a")
    if index >= len(normalised):
        return None
    # A choice whose text is itself a letter ("the answer is a" when a choice is "a") could be
    # named either way: no reading.
    if letter in normalised and normalised.index(letter) != index:
        return None
    if rest and _leading(rest, normalised) != index:
        return None
    for named in _NAMED_LETTER.finditer(text):
        other = ord(next(g for g in named.groups() if g).lower()) - ord("a")
        if other != index and other < len(normalised):
            return None
    return index


def match_choice(text: str | None, choices: Sequence[str], lettered: bool = False) -> ChoiceMatch:
    """Map a model reply to one of ``choices``; tiers are tried in order exact, letter, leading
    (a letter with more than its mark, such as "B) no", after leading).

    - exact: the normalised reply equals a normalised choice;
    - letter (only when ``lettered``): a letter naming an existing choice, alone ("B", "(B)",
      "B.", "B)") or marked and followed by that choice's text ("B) no", "(B) no"), optionally
      after "the answer is"; a letter whose text names another choice, or a reply naming two
      letters, is a parse failure;
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
    letter = _letter_index(text, reply, normalised) if lettered else None
    # A letter alone is read before the leading tier (as it always was); a letter with more
    # around it only after, so a reply that opens with a choice's own text ("b. ..." when a choice
    # is "b", "right answer: b") keeps the reading it had before letters with text were read.
    if letter is not None and _LETTER.match(reply):
        return ChoiceMatch(choice=choices[letter], tier="letter")
    leading = _leading(reply, normalised)
    if leading is not None:
        return ChoiceMatch(choice=choices[leading], tier="leading")
    if letter is not None:
        return ChoiceMatch(choice=choices[letter], tier="letter")
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
