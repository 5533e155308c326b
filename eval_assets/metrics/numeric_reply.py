"""Reading the number a model's reply gives for a numeric question, in the unit the case asks.

The rule is that a reply scores only the number it gives as its answer, converted, or nothing:
a reply that cannot be read with certainty is *unparseable* (a parse failure, scored 0), never
read as another number. So:

- Only quantities count. A number naming something (``frame 2``, ``image 3``, ``object 5``,
  ``#4``, a list marker ``1.``, an ordinal ``2nd``, ``3D``, a time ``10:30``, a fraction ``1/2``),
  a number in a unit of another dimension (``3 s``, ``40 px``, ``50 %``, ``2 m²`` asked in metres,
  ``1 m/s``) or a bare number counting something else (``3 frames``, ``2 chairs`` when a distance
  is asked) is not a candidate.
- Units convert: mm, cm, m, km, in/inch/``"``, ft/feet/foot/``'``, yd, their squares for areas,
  °/deg/degrees, rad, and ``N o'clock`` ((N mod 12)·30° wrapped into (−180°, 180°]). A bare
  number is in the unit asked. ``5'10"`` and ``1 m 20 cm`` are one length.
- A signed angle takes its sign from a direction next to it: ``45° left`` is −45°, ``45° right``
  +45° (clockwise positive, as the motion families ask); a direction named elsewhere in the reply
  than next to an unsigned angle makes the sign unknown, so the reply is unparseable. A magnitude
  (``magnitude=True``: by how many degrees) ignores directions and signs.
- Digits of any script read as their values (``١٫٥`` is 1.5). A single comma followed by exactly
  three digits is a thousands separator (``1,500``); any other single comma is a decimal comma
  (``2,5``, ``0,500``); with both marks the last one is the decimal mark (``1.500,5``,
  ``1,500.5``); groupings that fit neither (``1,2,3``, ``1.2.3``) are unparseable.
  Scientific notation (``1.5e2``, ``1.5 × 10^2``) reads.
- An uncertainty is no second value: ``2 ± 0.5 m`` and ``1.2 m, give or take 10 cm`` are 2 m
  and 1.2 m.
- Where the reply marks its answer (``\\boxed{…}``, then ``final answer``, then ``answer:`` /
  ``the answer is``, then ``**bold**``), only the quantities in the sentences (spans) so marked,
  of the most explicit kind that has any, count; a bold span marks only when it holds a value
  and words about it (``**about 2 m**``, not ``**Chair 2**``). Otherwise every quantity of the
  reply does.
- The quantities that count must all give one value (``2 m (200 cm)``; in two different units
  within 5%, the rounding of a conversion: ``1.5 m (5 ft)`` is 1.5 m, the first written);
  several values (``2 or 3 m``, ``between 2 and 3 m``, ``2-3 m``, ``2 x 3 m``) or a bound
  (``less than 2 m``, ``at least 3``) are unparseable.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from eval_assets.metrics.angular import wrap_degrees

__all__ = ["UNITS", "WRITTEN_UNITS", "Dimension", "ParsedNumber", "Unparseable",
           "parse_numeric_reply", "read_numeric_reply"]

Dimension = Literal["length", "area", "angle", "count", "other"]

_LENGTHS: dict[str, float] = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254,
                              "ft": 0.3048, "yd": 0.9144}
# Every unit a reply may write that converts, with its dimension and size in the dimension's
# base unit (metre, square metre, degree).
WRITTEN_UNITS: dict[str, tuple[Dimension, float]] = {
    **{name: ("length", size) for name, size in _LENGTHS.items()},
    **{f"{name}²": ("area", size * size) for name, size in _LENGTHS.items()},
    "deg": ("angle", 1.0), "rad": ("angle", 180.0 / math.pi), "o'clock": ("angle", 30.0),
}
# The units a case may ask for (the metric ones its labels use, and degrees).
UNITS: dict[str, tuple[Dimension, float]] = {
    name: WRITTEN_UNITS[name] for name in ("mm", "cm", "m", "mm²", "cm²", "m²", "deg")}


@dataclass(frozen=True)
class ParsedNumber:
    """A reply's number in the asked unit, and the unit the reply wrote (None: none written)."""

    value: float
    written_unit: str | None


@dataclass(frozen=True)
class Unparseable:
    """Why a reply gives no number that can be scored."""

    reason: str


# --- normalising the text -------------------------------------------------------------------

_CHARS = {"\u066b": ".", "\u066c": ",", "\u2212": "-", "\u2010": "-", "\u2011": "-",
          "\u2019": "'", "\u2018": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"',
          "\u2033": '"', "\uff1a": ":", "\uff0c": ",", "\uff0e": ".", "\uff5e": "~"}
_THIN_SPACES = "\u00a0\u202f\u2009\u2007"
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_LATEX: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    (r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}", r" \1"),
    (r"\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree", "°"),
    (r"\\times", "×"), (r"\\approx", "≈"), (r"\\%", "%"), (r"\\pm", "±"),
    (r"\\[,;!: ]", " "), (r"\\[()\[\]]|\$", " "),
))


def _normalise(reply: str) -> str:
    # Digits of any script (category Nd: Arabic-Indic, Devanagari, full-width, ...) as ASCII,
    # and the look-alike marks models emit, so one grammar reads them all.
    chars = []
    for ch in reply:
        if ch in _CHARS:
            chars.append(_CHARS[ch])
        elif unicodedata.category(ch) == "Nd":
            chars.append(str(unicodedata.decimal(ch)))
        else:
            chars.append(ch)
    text = "".join(chars)
    for pattern, replacement in _LATEX:
        text = pattern.sub(replacement, text)
    # A thin or no-break space between digit groups separates thousands ("1 500").
    text = re.sub(rf"(?<=\d)[{_THIN_SPACES}](?=\d{{3}}(?!\d))", "", text)
    text = re.sub(rf"[{_THIN_SPACES}]", " ", text)
    text = re.sub(r"10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)",
                  lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), text)
    # "2 ± 0.5 m" is 2 m: the uncertainty is not a second value, and its unit is the value's.
    return re.sub(r"(?<=\d)\s*(?:±|\+/-|\+-)\s*(?:\d+(?:[.,]\d+)*|\.\d+)", "", text)


# --- units ------------------------------------------------------------------------------------

_LENGTH_WORDS = (
    (r"millimet(?:re|er)s?|mm", "mm"), (r"centimet(?:re|er)s?|cm", "cm"),
    (r"kilomet(?:re|er)s?|km", "km"), (r"met(?:re|er)s?|m", "m"),
    # A bare "in" is inches only where it ends the clause; before a word it is the preposition.
    (r"inch(?:es)?|in(?=\s*(?:[.,;:!?)\]]|$))", "in"),
    (r"feet|foot|ft", "ft"), (r"yards?|yds?", "yd"),
)
_LENGTH_ALTERNATIVES = "|".join(f"(?P<{unit}>{pattern})" for pattern, unit in _LENGTH_WORDS)
_WORD_END = r"(?![A-Za-z0-9])"


def _length_name(match: re.Match[str]) -> str:
    return next(unit for _, unit in _LENGTH_WORDS if match.group(unit) is not None)


# (pattern, how to name the unit it matched, dimension), tried in order at a number's end.
_UNIT_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str], Dimension], ...] = (
    (re.compile(r"°\s?(?-i:[CF])(?![A-Za-z])", re.I), lambda m: "°C", "other"),
    (re.compile(rf"(?:square|sq\.?)\s*(?:{_LENGTH_ALTERNATIVES}){_WORD_END}", re.I),
     lambda m: _length_name(m) + "²", "area"),
    (re.compile(rf"(?:{_LENGTH_ALTERNATIVES})(?:²|\^2|2)(?![0-9])", re.I),
     lambda m: _length_name(m) + "²", "area"),
    (re.compile(r"o'?\s?clock" + _WORD_END, re.I), lambda m: "o'clock", "angle"),
    (re.compile(r"°|º|˚", re.I), lambda m: "deg", "angle"),
    (re.compile(r"(?:deg(?:ree)?s?)" + _WORD_END, re.I), lambda m: "deg", "angle"),
    (re.compile(r"(?:rad(?:ian)?s?)" + _WORD_END, re.I), lambda m: "rad", "angle"),
    (re.compile(rf"(?:{_LENGTH_ALTERNATIVES}){_WORD_END}", re.I), _length_name, "length"),
    (re.compile(r"(?:seconds?|secs?|s|ms|minutes?|mins?|hours?|hrs?|h|pixels?|px|percent|"
                r"per\s?cent|fps|hz|kg|grams?|lbs?|pounds?|kph|kmh|mph|years?|days?|"
                r"dollars?|euros?|usd|eur)" + _WORD_END, re.I), lambda m: "other", "other"),
    (re.compile(r"%"), lambda m: "%", "other"),
)
# Written right after the digits (no space): feet and inches; never after an opening quote.
_QUOTE_UNITS = {"'": "ft", '"': "in"}


@dataclass(frozen=True)
class _Unit:
    name: str
    dimension: Dimension
    end: int


def _unit_at(text: str, pos: int, number_start: int) -> _Unit | None:
    """The unit written at ``pos`` (after spaces and markdown emphasis, or in parentheses)."""
    if (pos < len(text) and text[pos] in _QUOTE_UNITS
            and not text[pos + 1:pos + 2].isalpha()  # "the 90's"
            and (number_start == 0 or text[number_start - 1] != text[pos])):
        name = _QUOTE_UNITS[text[pos]]
        return _Unit(name, "length", pos + 1)
    lead = re.compile(r"[ \t]*(?:[*_]{1,3}[ \t]*)?(\()?[ \t]*")
    opened = lead.match(text, pos)
    assert opened is not None  # the pattern matches the empty string
    start = opened.end()
    for pattern, name_of, dimension in _UNIT_PATTERNS:
        found = pattern.match(text, start)
        if found is None:
            continue
        end = found.end()
        if opened.group(1):  # "2 (m)": the parenthesis must close right after the unit
            closing = re.compile(r"[ \t]*\)").match(text, end)
            if closing is None:
                return None
            end = closing.end()
        # "m/s", "°/s", "km/h": a rate, another dimension.
        if re.compile(r"[ \t]*/[ \t]*[A-Za-z]").match(text, end):
            return _Unit("rate", "other", end)
        return _Unit(name_of(found), dimension, end)
    return None


# --- context words ------------------------------------------------------------------------------

# Nouns whose number names one of them ("frame 2") or counts them ("3 frames"), never a quantity.
_ID_NOUNS = (r"frames?|images?|imgs?|pictures?|photos?|photographs?|views?|snapshots?|shots?|"
             r"keyframes?|objects?|obj|tags?|ids?|markers?|labels?|steps?|options?|choices?|"
             r"questions?|figures?|figs?|cameras?|cams?|numbers?|index|idx|points?|"
             r"positions?|timestamps?|panels?|items?|boxes|box|regions?|candidates?")
_ID_BEFORE = re.compile(rf"(?:\b(?:{_ID_NOUNS})\.?[ \t]*[#=]?[ \t]*|\b(?:no|nos|nr)\.[ \t]*"
                        rf"|#[ \t]*)$", re.I)
_CHAIN = re.compile(r"^[ \t]*(?:,|and|&|-|–|—|to|through|or|/)[ \t]*(?:and[ \t]+)?$", re.I)
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:less|more|fewer|greater|smaller|larger|bigger|higher|lower|longer|shorter|"
    r"further|farther|closer|nearer)\s+than|\bat\s+(?:least|most)|\bup\s+to|\bunder|\bover|"
    r"\bbelow|\babove|\bexceeding|\bwithin|[<>≤≥]=?)\s*(?:about\s+|approximately\s+|"
    r"roughly\s+|around\s+|nearly\s+|almost\s+|~\s*|≈\s*)?[-+]?$", re.I)
# Words that may follow a bare number that still is the quantity asked ("2 or 3 m", "2 away").
_FUNCTION_WORDS = frozenset({"or", "and", "to", "away", "from", "apart", "in", "at", "on", "is",
    "are", "was", "were", "be", "which", "that", "because", "since", "as", "but", "so", "with",
    "for", "meaning", "ie", "eg", "i", "e", "give", "plus", "minus", "roughly", "approximately",
    "about", "around", "approx", "if", "when", "while", "then", "than", "x", "by", "along",
    "between", "into", "toward", "towards", "off", "further", "farther", "closer", "total",
    "overall", "straight", "directly", "diagonally", "horizontally", "vertically", "high", "tall",
    "wide", "long", "deep", "across", "ahead", "behind", "forward", "forwards", "back",
    "backward", "backwards", "up", "down", "left", "right", "clockwise", "counterclockwise",
    "anticlockwise", "counter", "anti", "ccw", "cw", "units", "unit"})
_NEXT_WORD = re.compile(r"[ \t]*(?:[*_]{1,3}[ \t]*)?([A-Za-z]+)")
_DIRECTIONS = r"left|right|counter-?clockwise|anti-?clockwise|clockwise|ccw|cw"
_DIRECTION_AFTER = re.compile(
    rf"[ \t]*[(,]?[ \t]*(?:to[ \t]+(?:the|my|your|its|our|their)[ \t]+|towards?[ \t]+"
    rf"(?:the[ \t]+)?|on[ \t]+(?:the|my|your|its)[ \t]+)?(?P<d>{_DIRECTIONS})\b", re.I)
_DIRECTION_BEFORE = re.compile(
    rf"\b(?P<d>{_DIRECTIONS})[ \t]*[,:]?[ \t]*(?:by[ \t]+|of[ \t]+|at[ \t]+)?(?:about[ \t]+|"
    rf"approximately[ \t]+|roughly[ \t]+|around[ \t]+|nearly[ \t]+|almost[ \t]+|~[ \t]*|"
    rf"≈[ \t]*)?$", re.I)
_ANY_DIRECTION = re.compile(rf"\b(?:{_DIRECTIONS})\b", re.I)


def _direction_sign(word: str) -> int:
    word = word.lower().replace("-", "")
    return -1 if word in ("left", "counterclockwise", "anticlockwise", "ccw") else 1


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


def _number_at(text: str, match: re.Match[str]) -> _Number | None:
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
            value *= 10.0 ** int(scale.group(1))
        pos = scale.end()
    return _Number(start, pos, match.group(), value, signed)


def _not_a_quantity(text: str, number: _Number, unit: _Unit | None, asked: _Asked,
                    chain_end: int | None) -> Literal["name", "other"] | None:
    """Why a number is no quantity: ``"name"`` for "frame 2" and the numbers listed after it;
    ``"other"`` for "2nd", "3D", a list marker, a bare number counting something else ("2
    chairs" when a distance is asked), a number in another dimension. None: a quantity."""
    pos = number.end
    if unit is not None:
        other = (unit.dimension == "other" or asked.dimension == "count"
                 or unit.dimension != asked.dimension)
        return "other" if other else None
    if re.compile(r"[:/^]\d|[A-Za-z]").match(text, pos):
        return "other"  # "10:30", "1/2", "2^3", "2nd", "3D", "2x"
    before = _context_before(text, number.start)
    if (not before[before.rfind("\n") + 1:].strip(" \t>*-")
            and re.compile(r"[.)][ \t]").match(text, pos)):
        return "other"  # a list marker "1. " / "2) "
    if number.digits.isdigit() and (_ID_BEFORE.search(before) or (
            chain_end is not None and _CHAIN.match(text[chain_end:number.start]))):
        return "name"
    word = _NEXT_WORD.match(text, pos)
    if (word is not None and asked.dimension != "count"
            and word.group(1).lower() not in _FUNCTION_WORDS):
        return "other"
    return None


def _candidates(text: str, asked: _Asked) -> tuple[list[_Candidate], list[tuple[int, int]]]:
    """Every quantity of ``text`` that may be the answer, and the spans of the direction words
    attached to one."""
    found: list[_Candidate] = []
    directions: list[tuple[int, int]] = []
    chain_end: int | None = None  # end of the last number naming something ("frames 2, 3")
    consumed = 0  # end of the last number's exponent: "5e-1" holds no second number "1"
    for match in _NUMBER.finditer(text):
        number = _number_at(text, match) if match.start() >= consumed else None
        if number is None:
            continue
        consumed = number.end
        unit = _unit_at(text, number.end, number.start)
        why_not = _not_a_quantity(text, number, unit, asked, chain_end)
        if why_not == "name":
            chain_end = number.end  # "frames 2, 3 and 5": the list goes on
        if why_not is not None:
            continue
        value = number.value
        candidate = _Candidate(number.start, unit.end if unit else number.end, value,
                               unit.name if unit else None, signed=number.signed)
        if value is None:
            candidate.problem = f"digits that read neither way: {number.digits!r}"
        elif unit is not None and unit.name == "o'clock":
            if not (value.is_integer() and 1 <= value <= 12) or number.signed:
                continue  # not a clock position
            candidate.value = wrap_degrees((value % 12) * 30.0)
        elif unit is not None:
            candidate.value = value * WRITTEN_UNITS[unit.name][1] / asked.size
        if _BOUND_BEFORE.search(_context_before(text, number.start)):
            candidate.problem = "a bound, not a value"
        if asked.dimension == "angle" and candidate.value is not None:
            _orient(text, candidate, asked, directions)
        found.append(candidate)
    return _compounds(text, found), directions


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
            out[-1] = _Candidate(last.start, candidate.end, last.value + candidate.value,
                                 last.unit)
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


def read_numeric_reply(reply: str | None, unit: str | None, *,
                       magnitude: bool = False) -> ParsedNumber | Unparseable:
    """The number ``reply`` gives as its answer, in ``unit`` (one of :data:`UNITS`; None: a
    count), or why it gives none (module docstring). ``magnitude``: an angle asked as a size
    ("by how many degrees"), so directions and signs do not matter."""
    if unit is not None and unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: expected one of {sorted(UNITS)} or None")
    dimension, size = UNITS[unit] if unit is not None else ("count", 1.0)
    asked = _Asked(dimension, size, magnitude)
    if not reply or not reply.strip():
        return Unparseable("empty reply")
    text = _normalise(reply)
    candidates, directions = _candidates(text, asked)
    boxed, final, answer, bold = _marked_tiers(text)
    for tier in (boxed, final, answer, _bold_values(text, bold, candidates)):
        marked = [c for c in candidates if any(a <= c.start < b for a, b in tier)]
        if marked:
            return _decide(marked)
    if not candidates:
        return Unparseable(f"no number in {unit or 'a count'}")
    decided = _decide(candidates)
    if (isinstance(decided, ParsedNumber) and dimension == "angle" and not magnitude
            and not any(c.directed or c.signed or c.unit == "o'clock" for c in candidates)
            and decided.value % 180 != 0):
        stray = [m for m in _ANY_DIRECTION.finditer(text) if m.span() not in directions]
        if stray:
            return Unparseable(f"a direction ({stray[0].group()!r}) is named apart from the "
                               f"angle, so its sign is unknown")
    return decided


def parse_numeric_reply(reply: str | None, unit: str | None, *,
                        magnitude: bool = False) -> ParsedNumber | None:
    """:func:`read_numeric_reply`, None where the reply is unparseable."""
    read = read_numeric_reply(reply, unit, magnitude=magnitude)
    return read if isinstance(read, ParsedNumber) else None
