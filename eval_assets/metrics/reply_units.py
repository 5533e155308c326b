"""The units a numeric reply may write: each with its dimension and its size in the dimension's
base unit (metre, square metre, degree), and where a unit ends after a number.

Split from :mod:`eval_assets.metrics.numeric_reply` by concept; the parser reads these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Dimension = Literal["length", "area", "volume", "angle", "count", "other"]

_LENGTHS: dict[str, float] = {"µm": 1e-6, "mm": 0.001, "cm": 0.01, "dm": 0.1, "m": 1.0,
                              "km": 1000.0, "in": 0.0254, "ft": 0.3048, "yd": 0.9144,
                              "mi": 1609.344}
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


# --- units ------------------------------------------------------------------------------------

_LENGTH_WORDS = (
    (r"micromet(?:re|er)s?|microns?|[µμ]m", "µm"), (r"millimet(?:re|er)s?|mm", "mm"),
    (r"centimet(?:re|er)s?|cm", "cm"), (r"decimet(?:re|er)s?|dm", "dm"),
    (r"kilomet(?:re|er)s?|km", "km"), (r"met(?:re|er)s?|m", "m"),
    # A bare "in" is inches only where it ends the clause; before a word it is the preposition.
    (r"inch(?:es)?|in(?=\s*(?:[.,;:!?)\]]|$))", "in"),
    (r"feet|foot|ft", "ft"), (r"yards?|yds?", "yd"), (r"miles?|mi", "mi"),
)
_LENGTH_ALTERNATIVES = "|".join(f"(?P<u{i}>{pattern})" for i, (pattern, _) in
                                enumerate(_LENGTH_WORDS))
# A unit word ends where no letter or digit of any script follows: "cm³" is no "cm".
_WORD_END = r"(?!\w)"


def _length_name(match: re.Match[str]) -> str:
    return next(unit for i, (_, unit) in enumerate(_LENGTH_WORDS)
                if match.group(f"u{i}") is not None)


# (pattern, how to name the unit it matched, dimension), tried in order at a number's end.
_UNIT_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str], Dimension], ...] = (
    (re.compile(r"°\s?(?-i:[CF])(?![A-Za-z])", re.I), lambda m: "°C", "other"),
    (re.compile(rf"(?:cubic|cu\.?)\s*(?:{_LENGTH_ALTERNATIVES}){_WORD_END}", re.I),
     lambda m: _length_name(m) + "³", "volume"),
    (re.compile(rf"(?:{_LENGTH_ALTERNATIVES})(?:³|\^3|3)(?![0-9])", re.I),
     lambda m: _length_name(m) + "³", "volume"),
    (re.compile(r"(?:cc|ml|millilit(?:re|er)s?|lit(?:re|er)s?|gallons?)" + _WORD_END, re.I),
     lambda m: m.group(), "volume"),
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
        rate = re.compile(r"[ \t]*/[ \t]*[A-Za-z]+").match(text, end)
        if rate:
            return _Unit("rate", "other", rate.end())
        return _Unit(name_of(found), dimension, end)
    return None
