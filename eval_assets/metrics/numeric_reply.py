"""Reading the number a model's reply gives for a numeric question, in the unit the case asks.

The rule is that a reply scores only the number it gives as its answer, converted, or nothing:
a reply that cannot be read with certainty is *unparseable* (a parse failure, scored 0), never
read as another number. So:

- Only quantities count. A number naming something (``frame 2``, ``image 3``, ``object 5``,
  ``#4``, a list marker ``1.``, an ordinal ``2nd``, ``3D``, a time ``10:30``, a fraction ``1/2``),
  a number in a unit of another dimension (``3 s``, ``40 px``, ``50 %``, ``2 m²`` or ``3 cm³``
  asked in metres, ``1 m/s``) or followed by a word that is no unit (``3 frames``, ``2 chairs``,
  ``3 units`` when a distance is asked) is not a candidate. A reply with no other number, or
  whose marked answer is such a number, is unparseable with the reason (``unknown unit
  'units'``, ``volume unit 'cm³' for a length``): a unit is never guessed.
- Units convert: µm, mm, cm, dm, m, km, in/inch/``"``, ft/feet/foot/``'``, yd, mi, their squares
  for areas, °/deg/degrees, rad, and ``N o'clock`` ((N mod 12)·30° wrapped into (−180°, 180°]). A
  bare number is in the unit asked. ``5'10"`` and ``1 m 20 cm`` are one length. (Words in
  other scripts than Latin are not judged: ``۲٫۵ متر`` is 2.5 in the unit asked.)
- A signed angle takes its sign from a direction next to it: ``45° left`` is −45°, ``45° right``
  +45° (clockwise positive, as the motion families ask); a direction named elsewhere in the reply
  than next to an unsigned angle makes the sign unknown, so the reply is unparseable. A magnitude
  (``magnitude=True``: by how many degrees) ignores directions and signs.
- Digits of any script read as their values (``١٫٥`` is 1.5). A single comma followed by exactly
  three digits is a thousands separator (``1,500``); any other single comma is a decimal comma
  (``2,5``, ``0,500``); with both marks the last one is the decimal mark (``1.500,5``,
  ``1,500.5``); groupings that fit neither (``1,2,3``, ``1.2.3``) are unparseable.
  Scientific notation (``1.5e2``, ``1.5 × 10^2``) reads; a number a float cannot hold as
  written (``1e400``, ``1e-400``, a subnormal, an overflow in conversion) or beyond 10^15 in the
  unit asked (no distance or angle, and past it scores lose their meaning) is ``out of range``.
- Numbers in words read where they are quantities: before a unit (``about two metres``, ``one
  and a half metres``, ``one point five m``, ``twenty-five cm``, ``a hundred and fifty cm``,
  ``half a metre``), alone (``Two.``, ``Answer: about three``), in a range (``two or three
  metres``: several values) and, for a count, before a noun (``There are three chairs.``);
  ``the one on the left``, ``one of them`` and ``a metre`` are no numbers.
- An uncertainty is no second value: ``2 ± 0.5 m`` and ``1.2 m, give or take 10 cm`` are 2 m
  and 1.2 m.
- Where the reply marks its answer (``\\boxed{…}``, then ``final answer``, then ``answer:`` /
  ``the answer is``, then ``**bold**``), only the quantities in the sentences (spans) so marked,
  of the most explicit kind that has any, count; a bold span marks only when it holds a value
  and words about it (``**about 2 m**``, not ``**Chair 2**``). Otherwise every quantity of the
  reply does.
- The quantities that count must all give one value (``2 m (200 cm)``; in two different units
  within 5%, the rounding of a conversion: ``1.5 m (5 ft)`` is 1.5 m, the first written);
  several values (``2 or 3 m``, ``between 2 and 3 m``, ``2-3 m``, ``2 x 3 m``), a bound
  (``less than 2 m``, ``at least 3``, ``2 m or more``), an open value (``2+ m``: ``not a single
  value``) or a self-correction (``3 m, no wait, 4 m``; ``Answer: 3 m. Actually 4 m.``) are
  unparseable; a hedge (``about``, ``~``) is not. A correction that ends on the marked answer
  (``I thought 3 m, but actually the answer is 4 m``) reads it.
- No reply string raises: whatever it holds, it is a value or one case's parse failure with
  its reason.
"""

from __future__ import annotations

import bisect
import math
import re
import sys
from dataclasses import dataclass
from typing import Literal

from eval_assets.metrics.angular import wrap_degrees
from eval_assets.metrics.reply_text import (
    _AFTER_A_UNIT,
    _ANY_DIRECTION,
    _BOUND_AFTER,
    _BOUND_BEFORE,
    _CHAIN,
    _DIRECTION_AFTER,
    _DIRECTION_BEFORE,
    _FUNCTION_WORDS,
    _ID_BEFORE,
    _ID_WORD,
    _LETTERS,
    _NEXT_WORD,
    _PLUS_AFTER,
    _WORD_ALONE_AFTER,
    _WORD_ALONE_BEFORE,
    _WORD_RANGE_AFTER,
    _direction_sign,
    _normalise,
    _shown,
)
from eval_assets.metrics.reply_units import (
    UNITS,
    WRITTEN_UNITS,
    Dimension,
    _Unit,
    _unit_at,
)

__all__ = ["UNITS", "WRITTEN_UNITS", "Dimension", "ParsedNumber", "Unparseable",
           "parse_numeric_reply", "read_numeric_reply"]

@dataclass(frozen=True)
class ParsedNumber:
    """A reply's number in the asked unit, and the unit the reply wrote (None: none written)."""

    value: float
    written_unit: str | None


@dataclass(frozen=True)
class Unparseable:
    """Why a reply gives no number that can be scored."""

    reason: str


# --- numbers ----------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\d.,])(?:\d+(?:[.,]\d+)*|\.\d+)")
_EXPONENT = re.compile(r"[eE]([-+]?\d+)")
# "1.2 m ± 0.1 m", "(+/- 0.1 m)", "give or take 10 cm": the number after it is no value.
_UNCERTAINTY_BEFORE = re.compile(r"(?:±|\+/-|\+-|\bgive\s+or\s+take)[ \t]*(?:about[ \t]+)?$",
                                 re.I)
_TIMES_TEN = re.compile(r"[ \t]*(?:[x×*·])[ \t]*10[ \t]*(?:\^|\*\*)[ \t]*\{?([-+]?\d+)\}?")


def _digits_value(digits: str) -> float | None:
    """The value of a digit string with ``.``/``,`` marks; None when the grouping is neither a
    decimal mark nor thousands separators."""
    if digits.startswith("."):
        return float("0" + digits)
    marks = re.findall(r"[.,]", digits)
    groups = re.split(r"[.,]", digits)
    if not marks:
        return float(digits)
    if len(set(marks)) == 1:
        mark = marks[0]
        if len(groups) == 2:
            if mark == "," and len(groups[1]) == 3 and groups[0] != "0" and len(groups[0]) <= 3:
                return float(groups[0] + groups[1])  # "1,500": thousands
            return float(f"{groups[0]}.{groups[1]}")
        if len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
            return float("".join(groups))  # "1,500,000", "1.500.000"
        return None
    decimal = marks[-1]
    if any(m == decimal for m in marks[:-1]):
        return None
    whole, fraction = groups[:-1], groups[-1]
    if len(whole[0]) > 3 or any(len(g) != 3 for g in whole[1:]):
        return None
    return float("".join(whole) + "." + fraction)


@dataclass
class _Candidate:
    start: int
    end: int
    value: float | None  # in the asked unit; None: digits that read neither way
    unit: str | None  # as written (canonical name); None: bare
    problem: str | None = None  # why it cannot be the answer by itself
    signed: bool = False
    directed: bool = False


@dataclass(frozen=True)
class _Asked:
    dimension: Dimension
    size: float
    magnitude: bool


# How far before a number its context words are looked for: they sit right before it, and a
# window keeps a long reply linear (searching every prefix for "...$" is quadratic).
_CONTEXT = 80


def _context_before(text: str, pos: int) -> str:
    return text[max(0, pos - _CONTEXT):pos]


@dataclass(frozen=True)
class _Number:
    start: int  # its sign included
    end: int  # after its exponent
    digits: str
    value: float | None  # None: digits that read neither way
    signed: bool
    in_words: bool  # written in words ("two"), now digits


# A float holds magnitudes from about 2.2e-308 to 1.8e308; a number beyond them cannot be read
# as written (it would become inf or 0), and a longer exponent than this is beyond them.
_EXPONENT_DIGITS = 5
# The largest magnitude read, in the unit asked: beyond it no distance or angle is meant, an
# angle's wrapping loses whole degrees and the mean relative error's sum overflows a float.
_LARGEST = 1e15


def _in_range(value: float, written: float) -> bool:
    """Whether ``value`` (``written`` after a scale or a conversion) is read as written and can
    be scored: finite, at most :data:`_LARGEST`, not 0 or subnormal where ``written`` is not 0."""
    return (math.isfinite(value) and abs(value) <= _LARGEST
            and (written == 0 or abs(value) >= sys.float_info.min))


def _scaled(value: float, exponent: str) -> float:
    """``value × 10^exponent``; ±inf where that overflows, 0 where it underflows."""
    if value == 0:
        return 0.0
    if len(exponent.lstrip("+-").lstrip("0")) > _EXPONENT_DIGITS:
        return 0.0 if exponent.startswith("-") else math.copysign(math.inf, value)
    try:
        return value * 10.0 ** int(exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def _number_at(text: str, match: re.Match[str], words: frozenset[int]) -> _Number | None:
    """The number ``match`` starts, with its sign and exponent; None where it is glued to what
    comes before ("x2", "A4", "$3", "1/2", "10^2", "10:30") or is an uncertainty ("± 0.1 m")."""
    start = match.start()
    if _UNCERTAINTY_BEFORE.search(_context_before(text, start)):
        return None
    signed = (start > 0 and text[start - 1] in "+-"
              and (start == 1 or not (text[start - 2].isalnum() or text[start - 2] in ")]}_")))
    if signed:
        start -= 1
    previous = text[start - 1] if start else ""
    if previous and (previous.isalnum() or previous in "_$€£¥/\\@^"):
        return None
    if previous == ":" and start >= 2 and text[start - 2].isdigit():
        return None
    value = _digits_value(match.group())
    if value is not None and signed and text[start] == "-":
        value = -value
    pos = match.end()
    scale = _EXPONENT.match(text, pos) or _TIMES_TEN.match(text, pos)
    if scale:
        if value is not None:
            value = _scaled(value, scale.group(1))
        pos = scale.end()
    return _Number(start, pos, match.group(), value, signed, match.start() in words)


_ASKED_NOUN = {"length": "a length", "area": "an area", "angle": "an angle", "count": "a count"}
# Why a number is not the answer: "name" for "frame 2" and the numbers listed after it,
# "other" for the rest, with the reason to give when the reply holds no other number (None:
# nothing worth saying, as for "2nd", "3D", a list marker).
_Skip = tuple[Literal["name", "other"], str | None]


def _word_number_skip(text: str, number: _Number, asked: _Asked) -> _Skip | None:
    """Whether a number written in words without a unit is a quantity (None) or not: only
    alone ("Two.", "Answer: about two"), in a range ("two or three m") or right after another
    quantity's unit ("five foot ten"); for a count also before a noun ("three chairs")."""
    pos = number.end
    before = _context_before(text, number.start)
    if number.start <= _CONTEXT:
        before = "\n" + before
    if _WORD_RANGE_AFTER.match(text, pos) or _AFTER_A_UNIT.search(before):
        return None
    if not _WORD_ALONE_BEFORE.search(before):
        return "other", None
    if _WORD_ALONE_AFTER.match(text, pos):
        return None
    word = _NEXT_WORD.match(text, pos)
    if (asked.dimension == "count" and word is not None
            and word.group(1).lower() not in _FUNCTION_WORDS | {"of"}):
        return None
    return "other", None


def _not_a_quantity(text: str, number: _Number, unit: _Unit | None, asked: _Asked,
                    chain_end: int | None) -> _Skip | None:
    """Why a number is no quantity: ``"name"`` for "frame 2" and the numbers listed after it;
    ``"other"`` for "2nd", "3D", a list marker, a bare number counting something else ("2
    chairs" when a distance is asked) or in an unknown unit ("3 units"), a number in another
    dimension. None: a quantity."""
    pos = number.end
    if unit is not None:
        if unit.dimension == "other" or unit.dimension != asked.dimension or (
                asked.dimension == "count"):
            written = text[pos:unit.end].strip(" \t*_()")
            noun = _ASKED_NOUN.get(asked.dimension, "this quantity")
            if unit.dimension in ("length", "area", "volume", "angle"):
                return "other", f"{unit.dimension} unit {_shown(written)} for {noun}"
            return "other", f"unit {_shown(written)} is not {noun}"
        return None
    if re.compile(rf"[:/^]\d|[{_LETTERS}]").match(text, pos):
        return "other", None  # "10:30", "1/2", "2^3", "2nd", "3D", "2x"
    before = _context_before(text, number.start)
    if number.digits.isdigit() and (_ID_BEFORE.search(before) or (
            chain_end is not None and _CHAIN.match(text[chain_end:number.start]))):
        return "name", None
    if number.in_words:
        return _word_number_skip(text, number, asked)
    if (not before[before.rfind("\n") + 1:].strip(" \t>*-")
            and re.compile(r"[.)][ \t]").match(text, pos)):
        return "other", None  # a list marker "1. " / "2) "
    word = _NEXT_WORD.match(text, pos)
    if (word is not None and asked.dimension != "count"
            and word.group(1).lower() not in _FUNCTION_WORDS
            and not _BOUND_AFTER.match(text, pos)):
        name = word.group(1)
        return "other", None if _ID_WORD.match(name) else f"unknown unit {_shown(name)}"
    return None


def _problem_after(text: str, number: _Number, end: int) -> str | None:
    """A bound or open value written right after a quantity ending at ``end``: "2+ m", "2 m+",
    "2 m or more", "3 at least"."""
    plus = _PLUS_AFTER.match(text, number.end) or _PLUS_AFTER.match(text, end)
    if plus:
        return f"not a single value: {_shown(text[number.start:plus.end()].strip())}"
    if _BOUND_AFTER.match(text, end):
        return "a bound, not a value"
    return None


@dataclass(frozen=True)
class _Found:
    """The quantities of a reply that may be its answer, the spans of the direction words
    attached to one, and the numbers that are no quantity with why (position, reason)."""

    candidates: list[_Candidate]
    directions: list[tuple[int, int]]
    refused: list[tuple[int, str]]


def _candidates(text: str, asked: _Asked, words: frozenset[int]) -> _Found:
    """Every quantity of ``text`` that may be the answer (module docstring)."""
    found: list[_Candidate] = []
    directions: list[tuple[int, int]] = []
    refused: list[tuple[int, str]] = []
    chain_end: int | None = None  # end of the last number naming something ("frames 2, 3")
    consumed = 0  # end of the last number's exponent: "5e-1" holds no second number "1"
    for match in _NUMBER.finditer(text):
        number = _number_at(text, match, words) if match.start() >= consumed else None
        if number is None:
            continue
        consumed = number.end
        unit = _unit_at(text, number.end, number.start)
        why_not = _not_a_quantity(text, number, unit, asked, chain_end)
        if why_not is not None:
            kind, reason = why_not
            if kind == "name":
                chain_end = number.end  # "frames 2, 3 and 5": the list goes on
            if reason is not None:
                refused.append((number.start, reason))
            continue
        value = number.value
        candidate = _Candidate(number.start, unit.end if unit else number.end, value,
                               unit.name if unit else None, signed=number.signed)
        written = text[number.start:candidate.end]
        if value is None:
            candidate.problem = f"digits that read neither way: {_shown(number.digits)}"
        elif unit is not None and unit.name == "o'clock":
            if not (value.is_integer() and 1 <= value <= 12) or number.signed:
                continue  # not a clock position
            candidate.value = wrap_degrees((value % 12) * 30.0)
        else:
            if unit is not None:
                candidate.value = value * WRITTEN_UNITS[unit.name][1] / asked.size
            assert candidate.value is not None
            if not _in_range(candidate.value, _digits_value(number.digits) or 0.0):
                candidate.problem = f"out of range: {_shown(written)}"
        if _BOUND_BEFORE.search(_context_before(text, number.start)):
            candidate.problem = "a bound, not a value"
        candidate.problem = _problem_after(text, number, candidate.end) or candidate.problem
        if asked.dimension == "angle" and candidate.value is not None:
            _orient(text, candidate, asked, directions)
        found.append(candidate)
    return _Found(_compounds(text, found), directions, refused)


def _orient(text: str, candidate: _Candidate, asked: _Asked,
            directions: list[tuple[int, int]]) -> None:
    """Sign an angle by the direction next to it (or drop the sign for a magnitude)."""
    assert candidate.value is not None
    if asked.magnitude:
        candidate.value = abs(candidate.value)
        return
    after = _DIRECTION_AFTER.match(text, candidate.end)
    before = _DIRECTION_BEFORE.search(_context_before(text, candidate.start))
    found = after or before
    if found is None:
        return
    directions.append(found.span("d"))
    candidate.directed = True
    sign = _direction_sign(found.group("d"))
    if candidate.unit == "o'clock" or candidate.signed:
        if candidate.value * sign < 0 and candidate.value % 180 != 0:
            candidate.problem = "its sign contradicts the direction named"
        return
    candidate.value = sign * abs(candidate.value)


_COMPOUND = {("ft", "in"), ("m", "cm"), ("yd", "ft")}


def _compounds(text: str, found: list[_Candidate]) -> list[_Candidate]:
    """``5'10"``, ``5 ft 10 in``, ``1 m 20 cm``: one length."""
    out: list[_Candidate] = []
    for candidate in found:
        last = out[-1] if out else None
        if (last is not None and (last.unit, candidate.unit) in _COMPOUND
                and not text[last.end:candidate.start].strip()
                and last.value is not None and candidate.value is not None
                and not (last.signed or candidate.signed or last.problem or candidate.problem)):
            total = last.value + candidate.value
            out[-1] = _Candidate(last.start, candidate.end, total, last.unit,
                                 problem=None if _in_range(total, total) else
                                 f"out of range: {_shown(text[last.start:candidate.end])}")
            continue
        out.append(candidate)
    return out


# --- where the answer is marked -------------------------------------------------------------------

_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_FINAL = re.compile(r"\bfinal\s+answer\b[*_]*[ \t]*(?:is\b[ \t]*[:\-—]?|[:=—]|\n)", re.I)
_ANSWER = re.compile(r"\banswer\b[*_]*[ \t]*(?:is\b[ \t]*[:\-—]?|[:=—]|\n)", re.I)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ABBREVIATIONS = ("approx", "ca", "est", "e.g", "i.e", "vs", "no", "fig", "in", "about")


def _sentence_after(text: str, pos: int) -> tuple[int, int]:
    """The span of the sentence that starts at ``pos``: up to a period that is no decimal point
    nor abbreviation, a semicolon or a line break (after its first words)."""
    start = re.compile(r"[\s*_#:>`]*").match(text, pos)
    assert start is not None
    begin = start.end()
    for stop in re.finditer(r"\.(?!\d)|;|\n", text[begin:]):
        end = begin + stop.start()
        if stop.group() == ".":
            word = re.search(r"([A-Za-z.]+)$", text[begin:end])
            if word and word.group(1).lower() in _ABBREVIATIONS:
                continue
        return begin, end
    return begin, len(text)


def _marked_tiers(text: str) -> list[list[tuple[int, int]]]:
    """The spans where the reply marks its answer, most explicit kind first."""
    boxed = [m.span(1) for m in _BOXED.finditer(text)]
    final = [_sentence_after(text, m.end()) for m in _FINAL.finditer(text)]
    answer = [_sentence_after(text, m.end()) for m in _ANSWER.finditer(text)]
    bold = [m.span(1) if m.group(1) is not None else m.span(2) for m in _BOLD.finditer(text)]
    return [boxed, final, answer, bold]


# Words a bold span may hold beside its value and still mark the answer ("**about 2 m**",
# "**Distance: 2 m**", "**45° left**"); "**Chair 2**" names an object and marks nothing.
_BOLD_WORDS = _FUNCTION_WORDS | frozenset({
    "answer", "final", "distance", "angle", "direction", "displacement", "length", "path",
    "estimate", "estimated", "the", "it", "its", "ca", "degrees"})


def _bold_values(text: str, spans: list[tuple[int, int]], candidates: list[_Candidate]
                 ) -> list[tuple[int, int]]:
    """The bold spans that hold a value and nothing but words about it."""
    out = []
    for a, b in spans:
        rest = list(text[a:b])
        for c in candidates:
            low, high = max(c.start, a), min(c.end, b)
            if low < high:
                rest[low - a:high - a] = [" "] * (high - low)
        if all(w.lower() in _BOLD_WORDS for w in re.findall(r"[A-Za-z]+", "".join(rest))):
            out.append((a, b))
    return out


# "1.5 m (5 ft)": the same quantity in two units agrees only to the rounding of the conversion.
_CONVERSION_TOLERANCE = 0.05


def _same(a: _Candidate, b: _Candidate) -> bool:
    assert a.value is not None and b.value is not None
    if math.isclose(a.value, b.value, rel_tol=1e-9, abs_tol=1e-12):
        return True
    return (a.unit is not None and b.unit is not None and a.unit != b.unit
            and math.isclose(a.value, b.value, rel_tol=_CONVERSION_TOLERANCE))


def _decide(candidates: list[_Candidate]) -> ParsedNumber | Unparseable:
    for candidate in candidates:
        if candidate.problem is not None:
            return Unparseable(candidate.problem)
    values: list[_Candidate] = []  # the first of each value, as written first
    for candidate in candidates:
        if not any(_same(candidate, v) for v in values):
            values.append(candidate)
    if len(values) > 1:
        return Unparseable("several values: " + ", ".join(f"{v.value:g}" for v in values))
    assert values[0].value is not None
    return ParsedNumber(values[0].value, values[0].unit)


# Words with which a reply takes back a value for another: "3 m, no wait, 4 m".
_CORRECTION = re.compile(
    r"\b(?:no[ \t,]+wait|wait|actually|correction|i[ \t]+mean|sorry|scratch[ \t]+that|"
    r"on[ \t]+second[ \t]+thoughts?|make[ \t]+that|let[ \t]+me[ \t]+correct|"
    r"i[ \t]+was[ \t]+wrong)\b", re.I)


def _self_correction(text: str, candidates: list[_Candidate],
                     decided: ParsedNumber | Unparseable) -> Unparseable | None:
    """A value the reply takes back for another ("3 m, no wait, 4 m", "Answer: 3 m. Actually,
    4 m."): which one it means would be a guess. None where there is none, or the correction
    ends on the value decided ("I thought 3 m, but actually the answer is 4 m")."""
    if isinstance(decided, Unparseable) and not decided.reason.startswith("several values"):
        return None
    chosen = (_Candidate(0, 0, decided.value, decided.written_unit)
              if isinstance(decided, ParsedNumber) else None)
    valued = [c for c in candidates if c.value is not None]
    starts = [c.start for c in valued]
    for mark in _CORRECTION.finditer(text):
        at = bisect.bisect_left(starts, mark.start())
        if at == 0 or at == len(valued):
            continue
        earlier, later = valued[at - 1], valued[at]
        if earlier.end > mark.start() or later.start < mark.end():
            continue
        if not _same(earlier, later) and (chosen is None or not _same(later, chosen)):
            return Unparseable(f"self-correction: {_shown(text[earlier.start:earlier.end])}, "
                               f"then {_shown(text[later.start:later.end])}")
    return None


def _read(reply: str, asked: _Asked, unit: str | None) -> ParsedNumber | Unparseable:
    text, words = _normalise(reply)
    found = _candidates(text, asked, words)
    candidates = found.candidates
    boxed, final, answer, bold = _marked_tiers(text)
    for tier in (boxed, final, answer, _bold_values(text, bold, candidates)):
        marked = [c for c in candidates if any(a <= c.start < b for a, b in tier)]
        if marked:
            decided = _decide(marked)
            return _self_correction(text, candidates, decided) or decided
        # "Answer: 3 units": the marked answer is refused, not replaced by an unmarked number.
        refused = [why for at, why in found.refused if any(a <= at < b for a, b in tier)]
        if refused:
            return Unparseable(refused[0])
    if not candidates:
        return Unparseable(found.refused[0][1] if found.refused
                           else f"no number in {unit or 'a count'}")
    decided = _decide(candidates)
    if (isinstance(decided, ParsedNumber) and asked.dimension == "angle" and not asked.magnitude
            and not any(c.directed or c.signed or c.unit == "o'clock" for c in candidates)
            and decided.value % 180 != 0):
        stray = [m for m in _ANY_DIRECTION.finditer(text) if m.span() not in found.directions]
        if stray:
            return Unparseable(f"a direction ({stray[0].group()!r}) is named apart from the "
                               f"angle, so its sign is unknown")
    return _self_correction(text, candidates, decided) or decided


def read_numeric_reply(reply: str | None, unit: str | None, *,
                       magnitude: bool = False) -> ParsedNumber | Unparseable:
    """The number ``reply`` gives as its answer, in ``unit`` (one of :data:`UNITS`; None: a
    count), or why it gives none (module docstring). ``magnitude``: an angle asked as a size
    ("by how many degrees"), so directions and signs do not matter. Raises only for a ``unit``
    no case asks in: no reply string makes it raise."""
    if unit is not None and unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: expected one of {sorted(UNITS)} or None")
    dimension, size = UNITS[unit] if unit is not None else ("count", 1.0)
    if not reply or not reply.strip():
        return Unparseable("empty reply")
    try:
        return _read(reply, _Asked(dimension, size, magnitude), unit)
    except (ArithmeticError, ValueError, RecursionError) as error:
        # Not expected (the reader checks every range it meets), but a reply is one case's
        # parse failure, never a failed run.
        return Unparseable(f"unreadable reply ({type(error).__name__}: {str(error)[:80]})")


def parse_numeric_reply(reply: str | None, unit: str | None, *,
                        magnitude: bool = False) -> ParsedNumber | None:
    """:func:`read_numeric_reply`, None where the reply is unparseable."""
    read = read_numeric_reply(reply, unit, magnitude=magnitude)
    return read if isinstance(read, ParsedNumber) else None
