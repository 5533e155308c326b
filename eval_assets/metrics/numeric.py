"""Numeric answers: VSI-Bench's Mean Relative Accuracy, the absolute relative error, and a
parser for replies such as "about 2,5 m" or "120 cm".

``mean_relative_accuracy`` is VSI-Bench's (vision-x-nyu/thinking-in-space,
``lmms_eval/tasks/vsibench/utils.py``) with its defaults start .5, end .95, interval .05: the
share of the confidence thresholds ``np.linspace(start, end, int((end - start) / interval + 2))``
at which ``|pred - gt| / gt <= 1 - threshold``. The float arithmetic is the reference's, its
artefacts included: ``(0.95 - 0.5) / 0.05`` is 8.999..., so there are 10 thresholds, and
whether an error of "exactly" 5% passes the 0.95 threshold depends on how ``|pred - gt| / gt``
and ``1 - 0.95`` round.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "UNITS",
    "ParsedNumber",
    "abs_dist_norm",
    "absolute_relative_error",
    "mean_relative_accuracy",
    "parse_numeric_reply",
]

# Each unit with its dimension and its size in the dimension's base unit (metre, square metre).
UNITS: dict[str, tuple[Literal["length", "area"], float]] = {
    "mm": ("length", 0.001), "cm": ("length", 0.01), "m": ("length", 1.0),
    "mm²": ("area", 1e-6), "cm²": ("area", 1e-4), "m²": ("area", 1.0),
}
_SPELLED = {"mm2": "mm²", "cm2": "cm²", "m2": "m²", "sq m": "m²", "square metres": "m²",
            "square meters": "m²", "metres": "m", "meters": "m", "metre": "m", "meter": "m",
            "centimetres": "cm", "centimeters": "cm", "millimetres": "mm", "millimeters": "mm"}
_NUMBER = re.compile(
    r"(?<![\w.,])(-?\d+(?:[.,]\d+)?)\s*(square metres|square meters|sq m|centimetres|centimeters"
    r"|millimetres|millimeters|metres|meters|metre|meter|mm²|cm²|m²|mm2|cm2|m2|mm|cm|m)?(?!\w)",
    re.IGNORECASE)


def abs_dist_norm(pred: float, target: float) -> float:
    """``|pred - target| / target`` (the reference's name and arithmetic)."""
    return abs(pred - target) / target


def mean_relative_accuracy(pred: float, target: float, start: float = 0.5, end: float = 0.95,
                           interval: float = 0.05) -> float:
    """VSI-Bench's MRA of one prediction: the mean over the confidence thresholds of
    ``abs_dist_norm(pred, target) <= 1 - threshold``."""
    num_pts = (end - start) / interval + 2
    conf_intervs = np.linspace(start, end, int(num_pts))
    accuracy = abs_dist_norm(pred, target) <= 1 - conf_intervs
    return float(accuracy.mean())


def absolute_relative_error(pred: float, target: float) -> float:
    """``|pred - target| / |target|``: how far off, as a share of the truth."""
    return abs(pred - target) / abs(target)


@dataclass(frozen=True)
class ParsedNumber:
    """A reply's number in the asked unit, and the unit the reply wrote (None: none written)."""

    value: float
    written_unit: str | None


def parse_numeric_reply(reply: str | None, unit: str | None) -> ParsedNumber | None:
    """The first number of ``reply`` in ``unit`` (one of :data:`UNITS`; None: a count, which
    has no unit), or None when the reply holds no number, or only numbers in a unit of another
    dimension (m² asked in metres).

    A decimal comma reads as a decimal point ("2,5" is 2.5). A number with a unit is converted
    ("120 cm" asked in m is 1.2); a bare number is taken in the asked unit. A count takes the
    first number as written, whatever follows it ("3 chairs" is 3).
    """
    if unit is not None and unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: expected one of {sorted(UNITS)} or None")
    dimension, size = UNITS[unit] if unit is not None else ("count", 1.0)
    for match in _NUMBER.finditer(reply or ""):
        number = float(match.group(1).replace(",", "."))
        written = match.group(2)
        if written is None or unit is None:
            return ParsedNumber(number, None)
        name = _SPELLED.get(written.lower(), written.lower())
        other_dimension, other_size = UNITS[name]
        if other_dimension == dimension:
            return ParsedNumber(number * other_size / size, name)
    return None
