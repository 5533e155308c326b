"""How a numeric reply's text reads, before its numbers are: the characters normalised, numbers
written in words turned into digits, and the words around a number that say what it is (an id,
a bound, a direction, a hedge).

Split from :mod:`eval_assets.metrics.numeric_reply` by concept; that module is the parser and
the only reader of these names.
"""

from __future__ import annotations

import re
import unicodedata

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


def _normalise(reply: str) -> tuple[str, frozenset[int]]:
    """The reply in one grammar, and where the numbers it wrote in words (now digits) begin."""
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
    text = re.sub(r"(?<=\d)\s*(?:±|\+/-|\+-)\s*(?:\d+(?:[.,]\d+)*|\.\d+)", "", text)
    return _number_words_as_digits(text)


# --- numbers written in words -----------------------------------------------------------------

_ONES = {word: value for value, word in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen"))}
_TENS = {word: 10 * value for value, word in enumerate((
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), start=2)}
_SEP = r"[ \t-]+"
_DIGIT_WORD = "|".join(list(_ONES)[:10])
_NONZERO_DIGIT_WORD = "|".join(list(_ONES)[1:10])
_BELOW_100 = (rf"(?:(?:{'|'.join(_TENS)})(?:{_SEP}(?:{_NONZERO_DIGIT_WORD}))?"
              rf"|{'|'.join(sorted(_ONES, key=len, reverse=True))})")
_WHOLE = (rf"(?:(?:(?:a|{_NONZERO_DIGIT_WORD}){_SEP})?hundred"
          rf"(?:{_SEP}(?:and{_SEP})?{_BELOW_100})?|{_BELOW_100})")
_AND_A_HALF = rf"{_SEP}and{_SEP}a{_SEP}half"
# "two", "twenty-five", "a hundred and fifty", "one point five", "one and a half", "3 and a
# half", "half a", "a half". "a metre" is no number: "a" is read only in these phrases.
_WORD_NUMBER = re.compile(
    rf"\b(?:{_WHOLE}(?:{_SEP}point(?:{_SEP}(?:{_DIGIT_WORD}))+|{_AND_A_HALF})?"
    rf"|(?<![\d.,])\d+{_AND_A_HALF}|half{_SEP}an?|a{_SEP}half)\b", re.I)


def _word_value(phrase: str) -> float:
    """The value of a phrase :data:`_WORD_NUMBER` matched."""
    words = re.findall(r"[a-z]+|\d+", phrase.lower())
    if words[0] == "half" or words == ["a", "half"]:
        return 0.5
    whole = 0
    for i, word in enumerate(words):
        if word == "point":
            return float(f"{whole}." + "".join(str(_ONES[d]) for d in words[i + 1:]))
        if word == "half":
            return whole + 0.5
        if word.isdigit():
            whole = int(word)
        elif word == "hundred":
            whole = (whole or 1) * 100
        else:
            whole += _ONES.get(word, _TENS.get(word, 0))  # "a", "and": nothing
    return float(whole)


def _number_words_as_digits(text: str) -> tuple[str, frozenset[int]]:
    """``text`` with its numbers written in words as digits ("about two metres": "about 2
    metres"), and where each begins."""
    parts: list[str] = []
    starts: set[int] = set()
    length = last = 0
    for match in _WORD_NUMBER.finditer(text):
        before = text[last:match.start()]
        value = _word_value(match.group())
        digits = str(int(value)) if value.is_integer() else repr(value)
        parts += [before, digits]
        starts.add(length + len(before))
        length += len(before) + len(digits)
        last = match.end()
    parts.append(text[last:])
    return "".join(parts), frozenset(starts)


def _shown(written: str) -> str:
    """A piece of the reply quoted in a reason, cut to a readable length."""
    return repr(written if len(written) <= 40 else written[:37] + "...")


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
    "anticlockwise", "counter", "anti", "ccw", "cw"})
# A word in Latin script (accented letters too, not × or ÷): after a number, an unknown one is
# an unknown unit ("3 units", "3 Å"). Other scripts are not judged ("۲٫۵ متر" reads 2.5).
_LETTERS = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_NEXT_WORD = re.compile(rf"[ \t]*(?:[*_]{{1,3}}[ \t]*)?([{_LETTERS}]+)")
_ID_WORD = re.compile(rf"(?:{_ID_NOUNS})$", re.I)
# A bound written after the value: "2 m or more", "3 at least", "2+ m".
_BOUND_AFTER = re.compile(
    r"[ \t]*(?:or[ \t]+(?:more|less|fewer|greater|higher|lower|longer|shorter|above|below|"
    r"over|under|further|farther|closer|larger|smaller|bigger)|at[ \t]+(?:least|most)|"
    r"minimum|maximum|and[ \t]+(?:up|above|over|more|beyond|higher|greater))\b", re.I)
_PLUS_AFTER = re.compile(r"[ \t]*\+(?![ \t]*[\d.(]|/-|-)")
# A number written in words is a quantity with a unit after it ("two metres"), or alone: after
# nothing but hedges (from its sentence's start, "is", "answer: ") and before the sentence's end;
# "the one on the left", "one of them", "a two-step turn" are no quantities.
_HEDGES = (r"(?:about|approximately|approx\.?|roughly|around|nearly|almost|maybe|perhaps|"
           r"probably|ca\.?|~|≈)")
_WORD_ALONE_BEFORE = re.compile(
    rf"(?:[.!?;:\n{{(*]|\b(?:is|are|was|were|be|equals?|count|see|say|guess|think|"
    rf"estimate|answer))[ \t,]*"
    rf"(?:{_HEDGES}[ \t,]*)*$", re.I)
_WORD_ALONE_AFTER = re.compile(r"[ \t]*(?:[.!?;,)}*\n]|$)")
# "two or three metres", "two to three", "two-three": a range, the first number a value too.
_WORD_RANGE_AFTER = re.compile(r"[ \t]*(?:(?:or|to|and)[ \t]+|[-–][ \t]*)(?:about[ \t]+)?\d",
                               re.I)
# "five foot ten": a number right after another's unit is part of the quantity.
_AFTER_A_UNIT = re.compile(r"\d[ \t]*[A-Za-z'\"]+[ \t]*$")
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
