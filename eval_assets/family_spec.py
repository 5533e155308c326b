"""One declaration per question family: :class:`FamilySpec`, and the registry every reader uses.

A family is declared once, beside its rule, with everything the rest of the project must know
about it: its name, its question (a template), its answer type with its fixed choices or its
unit, the evidence it needs, the rule that answers it, how the numeric metric scores it and how
the time controls (TimeFlip, RepeatFrames) treat it. The generator (which families to offer, which
need LiDAR), the schemas (which family names a label may carry, a spatial case's answer type and
unit), the scorer (zero rule, angle magnitude), the time controls and the report's family order
read :func:`families` / :func:`family`, the way metrics are read from
:class:`~eval_assets.scoring.spec.MetricSpec`.

The declaring modules (:mod:`eval_assets.vqa.families`, :mod:`eval_assets.vqa.spatial.declared`)
call :func:`register` at import; :mod:`eval_assets.vqa.declarations`, the one module above both,
imports them and then calls :func:`all_declared`. This module imports neither: it sits below the
schemas and the generators, so both can import it, and nothing here reaches back up the layers.
A reader above the generators imports its lookups from :mod:`eval_assets.vqa.declarations`,
which guarantees they are filled; a reader below them (the schemas, the time and prompt
controls, the numeric rules) reads them here, and the program's entry points (the CLI, the
code location, the test suite's conftest) import the declarations before anything is read. A
lookup before that raises :class:`FamiliesNotDeclaredError` instead of answering from a partial
registry. Adding a family is one ``register(FamilySpec(...))`` in its module and its tests; a
test may :func:`register` a family of its own and :func:`unregister` it afterwards.

No Dagster, no evidence types, no imports from this package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AnswerType", "Evidence", "FamiliesNotDeclaredError", "FamilySpec", "File",
           "TimeControl", "all_declared", "declared", "families", "family", "family_names",
           "register", "unregister"]

AnswerType = Literal["choice", "number"]
# Where a family's cases are published: dimOS's single-image files (cases.jsonl, one image,
# fixed choices) or the spatial files beside them (spatial_cases.jsonl, shared/specs/spatial.md).
File = Literal["dimos", "spatial"]
# What a family's rule reads. "lidar": projected LiDAR ranges (a frame without a point cloud
# cannot answer it, so the generator does not offer it there); "tracks": world-frame object
# tracks; "trajectory": the camera's TF poses over time.
Evidence = Literal["detections", "masks", "lidar", "tracks", "trajectory"]

@dataclass(frozen=True)
class TimeControl:
    """How the time controls treat a family (``shared/specs/motion.md``): ``time_flip`` maps its
    gold answer (and each choice) when its frames are reversed, None when reversing is not asked;
    ``repeat_frames`` whether doubling every frame leaves its truth unchanged (and is asked)."""

    time_flip: Callable[[str], str] | None
    repeat_frames: bool


@dataclass(frozen=True)
class FamilySpec:
    """Everything about one question family, declared once.

    ``question`` is the wording (a template: ``{name}`` is the object's name where the family
    takes one; a spatial family's generator fills in more). ``choices`` are the fixed choices,
    None when each case has its own (the references asked about, orderings) or the answer is a
    number. ``unit`` is a number's unit (``cm``, ``m``, ``m2``, ``deg``; None for a count).
    ``rule`` answers it: for a ``dimos`` family an object with ``decide(names, evidence)`` and
    ``min_names``, ``max_names``, ``order_independent``
    (:class:`eval_assets.vqa.families.FamilyRule`), for a ``spatial`` family a generator from a
    track index to cases and rejections; None when
    the family is declared but not generated (``room_area_m2``). ``cap`` bounds a spatial
    family's cases per recording (None: the spatial default). ``zero_rule``: a distance whose
    truth may be 0, scored by OSI-Bench's zero rule; ``magnitude``: an angle asked as a size, a
    reply's sign or direction is not part of the answer. ``time``: None when the time controls
    never ask it. ``paraphrase``: the same question in other words (the same fields,
    ``{name}`` etc., as ``question``), which the prompt-template control asks beside the record
    wording and the format template (:mod:`eval_assets.prompt_controls`); None: not asked in
    another wording. Every built-in family declares one.
    """

    name: str
    file: File
    question: str
    answer_type: AnswerType
    needs: frozenset[Evidence]
    rule: Any = None
    choices: tuple[str, ...] | None = None
    unit: str | None = None
    cap: int | None = None
    zero_rule: bool = False
    magnitude: bool = False
    time: TimeControl | None = None
    paraphrase: str | None = None

    def __post_init__(self) -> None:
        if self.answer_type == "choice" and self.unit is not None:
            raise ValueError(f"family {self.name!r}: a choice family has no unit")
        if self.answer_type == "number" and self.choices is not None:
            raise ValueError(f"family {self.name!r}: a number family has no choices")
        if self.file == "dimos" and self.answer_type != "choice":
            raise ValueError(f"family {self.name!r}: dimOS's files hold choice cases only; "
                             "declare it with file='spatial'")
        if (self.zero_rule or self.magnitude) and self.answer_type != "number":
            raise ValueError(f"family {self.name!r}: zero_rule and magnitude are number rules")

    @property
    def answer_kind(self) -> Literal["choice", "length", "angle", "count"]:
        """How a reply is judged right: a choice, or a number that is a count, an angle or a
        length (any other unit)."""
        if self.answer_type == "choice":
            return "choice"
        if self.unit is None:
            return "count"
        return "angle" if self.unit == "deg" else "length"


_REGISTRY: dict[str, FamilySpec] = {}
_complete = False
DECLARATIONS_MODULE = "eval_assets.vqa.declarations"


class FamiliesNotDeclaredError(RuntimeError):
    """The registry was read before the built-in families were declared (nothing in this
    process imported :mod:`eval_assets.vqa.declarations`)."""


def register(spec: FamilySpec) -> FamilySpec:
    """Declare ``spec``; a ValueError when its name is taken (two declarations of one family
    would disagree somewhere). Returns ``spec``."""
    if spec.name in _REGISTRY:
        raise ValueError(f"family {spec.name!r} is declared twice; declare it once "
                         "(eval_assets.family_spec.register)")
    _REGISTRY[spec.name] = spec
    return spec


def all_declared() -> None:
    """Mark the built-in families as declared: called once by :mod:`eval_assets.vqa.declarations`
    after importing every declaring module. Lookups answer from then on."""
    global _complete
    _complete = True


def unregister(name: str) -> None:
    """Forget the family ``name`` (for tests that declared their own); KeyError if unknown."""
    del _REGISTRY[name]


@contextmanager
def declared(spec: FamilySpec) -> Iterator[FamilySpec]:
    """``spec`` registered for the ``with`` block, unregistered after (tests)."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


def _registry() -> dict[str, FamilySpec]:
    if not _complete:
        raise FamiliesNotDeclaredError(
            "the question families were read before they were declared: import "
            f"{DECLARATIONS_MODULE} first (the CLI, the code location and the tests' conftest "
            "do; a script that reads cases, labels or the time and prompt controls without "
            "them must too)")
    return _REGISTRY


def families(file: File | None = None) -> tuple[FamilySpec, ...]:
    """Every declared family (only those published in ``file``, if given), in declaration
    order: dimOS's seven, then the spatial ones, then any declared later."""
    return tuple(s for s in _registry().values() if file is None or s.file == file)


def family_names(file: File | None = None) -> tuple[str, ...]:
    """The names of :func:`families`."""
    return tuple(s.name for s in families(file))


def family(name: str) -> FamilySpec | None:
    """The declaration of ``name``; None when no family has that name."""
    return _registry().get(name)
