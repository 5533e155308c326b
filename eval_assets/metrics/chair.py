"""CHAIR object-hallucination rates (Rohrbach et al. 2018; rules from specs/metrics.md §2).

``chair_metrics`` is the exact seed-problem function over pre-split words. The text mode
(``tokenize_caption`` + ``chair_from_texts``) turns free-text descriptions into words the MSCOCO
synonym list understands, then applies the same rule, keeping per-caption detail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, Field

__all__ = [
    "ChairCaption",
    "ChairReport",
    "chair_from_texts",
    "chair_metrics",
    "load_coco_synonyms",
    "singular_forms",
    "tokenize_caption",
]

SYNONYMS_RESOURCE = "coco_synonyms.txt"

# Plurals that suffix stripping cannot undo.
_IRREGULAR_PLURALS = {
    "men": "man",
    "women": "woman",
    "people": "person",
    "persons": "person",
    "children": "child",
    "mice": "mouse",
    "geese": "goose",
    "knives": "knife",
    "feet": "foot",
    "teeth": "tooth",
    "oxen": "ox",
}

_WORD = re.compile(r"[a-z0-9]+")


def _chair_counts(
    mapped: Sequence[Sequence[str]], ground_truth: Sequence[Sequence[str]]
) -> tuple[list[list[str]], list[list[str]]]:
    """Per caption: deduplicated mentions (first-seen order) and the hallucinated ones."""
    mentions: list[list[str]] = []
    hallucinated: list[list[str]] = []
    for names, truth in zip(mapped, ground_truth, strict=True):
        unique = list(dict.fromkeys(names))
        truth_set = set(truth)
        mentions.append(unique)
        hallucinated.append([name for name in unique if name not in truth_set])
    return mentions, hallucinated


def _rates(
    mentions: Sequence[Sequence[str]], hallucinated: Sequence[Sequence[str]]
) -> tuple[float, float, list[str]]:
    n_mentions = sum(len(m) for m in mentions)
    n_hallucinated = sum(len(h) for h in hallucinated)
    chair_i = round(n_hallucinated / n_mentions, 4) if n_mentions else 0.0
    chair_s = round(sum(1 for h in hallucinated if h) / len(mentions), 4) if mentions else 0.0
    objects = sorted({name for h in hallucinated for name in h})
    return chair_i, chair_s, objects


def _check_lengths(captions: Sequence[object], ground_truth: Sequence[object]) -> None:
    if len(captions) != len(ground_truth):
        raise ValueError(
            f"captions and ground_truth must have one entry per image: got {len(captions)} "
            f"captions and {len(ground_truth)} ground-truth lists"
        )


def chair_metrics(
    captions: Sequence[Sequence[str]],
    ground_truth: Sequence[Sequence[str]],
    synonym_map: Mapping[str, str],
) -> list[float | list[str]]:
    """``[chair_i, chair_s, objects]`` for n captions of raw words against n ground-truth lists.

    Words that are not keys of ``synonym_map`` are not mentions. Mentions are mapped to canonical
    names and deduplicated per caption; a mention is hallucinated when its canonical name is not in
    that image's ground truth. Rates are rounded to 4 decimals (0.0 when the denominator is 0);
    ``objects`` is the sorted set of hallucinated canonical names.
    """
    _check_lengths(captions, ground_truth)
    mapped = [[synonym_map[w] for w in words if w in synonym_map] for words in captions]
    chair_i, chair_s, objects = _rates(*_chair_counts(mapped, ground_truth))
    return [chair_i, chair_s, objects]


@lru_cache(maxsize=1)
def _packaged_synonyms() -> dict[str, str]:
    text = (
        resources.files("eval_assets")
        .joinpath("data")
        .joinpath(SYNONYMS_RESOURCE)
        .read_text("utf-8")
    )
    return parse_synonyms(text, source=f"eval_assets/data/{SYNONYMS_RESOURCE}")


def parse_synonyms(text: str, source: str = "<text>") -> dict[str, str]:
    """Parse a synonym list: one category per line, ``", "``-separated, canonical name first.

    Entries are stripped (the MSCOCO file has double spaces) and keys lower-cased (it has
    "iPhone", and captions are lower-cased before lookup). A word listed under two categories
    keeps the first.
    """
    mapping: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entries = [e.strip() for e in line.split(", ")]
        entries = [e for e in entries if e]
        if not entries:
            continue
        canonical = entries[0].lower()
        if "," in line.replace(", ", ""):
            raise ValueError(
                f"{source}:{number}: entries must be separated by ', ' (comma and space); "
                f"fix the separators on this line"
            )
        for entry in entries:
            mapping.setdefault(entry.lower(), canonical)
    return mapping


def load_coco_synonyms() -> dict[str, str]:
    """The packaged 80-category MSCOCO synonym list as raw word -> canonical name (a fresh copy)."""
    return dict(_packaged_synonyms())


def singular_forms(word: str) -> list[str]:
    """Candidate singulars of ``word``, most specific first (may include non-words)."""
    if word in _IRREGULAR_PLURALS:
        return [_IRREGULAR_PLURALS[word]]
    forms: list[str] = []
    if word.endswith("ies") and len(word) > 4:
        forms.append(word[:-3] + "y")
    if word.endswith("ves") and len(word) > 4:
        forms += [word[:-3] + "f", word[:-3] + "fe"]
    if word.endswith("es") and len(word) > 3:
        forms.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 2:
        forms.append(word[:-1])
    return forms


def _known(word: str, synonyms: Mapping[str, str], head: str = "") -> str | None:
    """The listed form of ``word`` (itself, else its first listed singular), or None.

    With ``head``, the lookup is for the phrase ``head + " " + word`` and the phrase is returned.
    """
    prefix = f"{head} " if head else ""
    for form in (word, *singular_forms(word)):
        if prefix + form in synonyms:
            return prefix + form
    return None


@lru_cache(maxsize=8)
def _phrase_lengths(keys: frozenset[str]) -> tuple[int, ...]:
    return tuple(sorted({len(k.split()) for k in keys}, reverse=True))


def tokenize_caption(text: str, synonyms: Mapping[str, str] | None = None) -> list[str]:
    """Lower-cased words of ``text`` with listed multi-word names joined and plurals singular.

    Punctuation separates words. Multi-word names ("teddy bear", "hot dog", "traffic light",
    "stove top oven") are joined first, longest first, accepting a plural last word ("teddy
    bears"). A word is put in the singular only when that singular is a listed name, so words
    that are not object names pass through unchanged. ``synonyms`` defaults to the COCO list.
    """
    synonyms = _packaged_synonyms() if synonyms is None else synonyms
    words = _WORD.findall(text.lower())
    lengths = _phrase_lengths(frozenset(k for k in synonyms if " " in k))
    tokens: list[str] = []
    i = 0
    while i < len(words):
        for size in lengths:
            if i + size > len(words):
                continue
            phrase = _known(words[i + size - 1], synonyms, head=" ".join(words[i : i + size - 1]))
            if phrase is not None:
                tokens.append(phrase)
                i += size
                break
        else:
            tokens.append(_known(words[i], synonyms) or words[i])
            i += 1
    return tokens


class ChairCaption(BaseModel):
    """CHAIR detail for one caption."""

    index: int
    mentioned: list[str] = Field(description="canonical names mentioned, first-seen order")
    hallucinated: list[str] = Field(description="mentioned names absent from the ground truth")
    ground_truth: list[str] = Field(description="canonical ground-truth names used")


class ChairReport(BaseModel):
    """CHAIR over a set of free-text captions."""

    chair_i: float
    chair_s: float
    objects: list[str]
    n_captions: int
    n_mentions: int
    n_hallucinated_mentions: int
    captions: list[ChairCaption]


def chair_from_texts(
    texts: Sequence[str],
    ground_truth: Sequence[Sequence[str]],
    synonyms: Mapping[str, str] | None = None,
) -> ChairReport:
    """CHAIR of free-text captions, with per-caption mentioned / hallucinated objects.

    Ground-truth names go through the same synonym map (so "man" counts as "person"); names that
    are not listed are kept verbatim. The rates equal ``chair_metrics`` on the tokenized captions.
    """
    _check_lengths(texts, ground_truth)
    synonyms = _packaged_synonyms() if synonyms is None else synonyms
    mapped = [
        [synonyms[t] for t in tokenize_caption(text, synonyms) if t in synonyms] for text in texts
    ]
    truths = [
        list(
            dict.fromkeys(
                synonyms.get(name.strip().lower(), name.strip().lower()) for name in names
            )
        )
        for names in ground_truth
    ]
    mentions, hallucinated = _chair_counts(mapped, truths)
    chair_i, chair_s, objects = _rates(mentions, hallucinated)
    return ChairReport(
        chair_i=chair_i,
        chair_s=chair_s,
        objects=objects,
        n_captions=len(texts),
        n_mentions=sum(len(m) for m in mentions),
        n_hallucinated_mentions=sum(len(h) for h in hallucinated),
        captions=[
            ChairCaption(index=i, mentioned=m, hallucinated=h, ground_truth=t)
            for i, (m, h, t) in enumerate(zip(mentions, hallucinated, truths, strict=True))
        ],
    )
