"""The shape every metric module exports: one :class:`MetricSpec`.

A spec holds everything the pipeline, the leaderboard and the report must know about one metric:
its name (its Dagster asset key and its folder under the storage root), its output file, what it
needs, a Dagster-free scoring function that returns its result or a visible
:class:`~eval_assets.schemas.results.NotMeasured` record, its result model, its leaderboard
columns and how they pool over cells, and its report section as data (:class:`ReportTable`).
The metric assets, the leaderboard and the report iterate :data:`eval_assets.scoring.METRICS`,
the registry of every spec a module of :mod:`eval_assets.scoring` defines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from eval_assets.metrics.vision import SimilarityScorer
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset

R = TypeVar("R", bound=BaseModel)

# What a metric reads besides the run and the private dataset; the asset factory provides it.
# "labels": it scores against the gold answers, so human label overrides
# (eval_assets.vqa.overrides) are an input of it and a new override recomputes it.
Need = Literal["annotations", "flips", "judge", "labels", "rotations", "similarity"]


@dataclass(frozen=True)
class JudgeHandle:
    """An opened judge: its config, its client and the models under test it must not judge."""

    config: Any
    client: Any
    self_judging_models: Sequence[str]


@dataclass(frozen=True)
class Similarity:
    """The sentence-embedding scorer of the vision metrics, with its settings."""

    scorer: SimilarityScorer
    embedder: str
    threshold: float


@dataclass(frozen=True)
class ScoringInputs:
    """What a metric's ``score`` reads for one (recording, model) cell.

    ``out_dir`` is the metric's own folder (a metric that writes more than its result file, such
    as an AVLM inference folder, writes there). ``notes`` collects run facts for the asset's
    metadata (timings, call counts) and ``warnings`` lines for its log; neither is a score.
    """

    recording: str
    model: str
    data: PrivateDataset
    run: ModelRun
    run_dir: Path
    out_dir: Path
    annotations: Mapping[int, FrameAnnotation] | None = None
    judge: JudgeHandle | None = None
    similarity: Similarity | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Column:
    """One leaderboard column: a float (NaN when missing), or a count (``integer``): nullable
    (pandas ``Int64``, null when missing) unless ``nullable`` is off (``int64``)."""

    name: str
    integer: bool = False
    nullable: bool = True


# Report table cells: small typed values the report renders, never markup. ``style`` names one
# of the report's text styles (bold, muted n/a, interval grey, model name, flag, meta).
Style = Literal["b", "na", "ci", "model", "flag", "meta"] | None


@dataclass(frozen=True)
class Text:
    """Literal text, escaped by the report; ``title`` becomes a hover hint."""

    text: str
    style: Style = None
    title: str | None = None


@dataclass(frozen=True)
class Pct:
    """A share as a percentage (n/a when missing); ``bold`` for a headline number."""

    value: float | None
    digits: int = 1
    bold: bool = False


@dataclass(frozen=True)
class Num:
    """A number with fixed decimals (n/a when missing)."""

    value: float | None
    digits: int = 2


@dataclass(frozen=True)
class Int:
    """A count with thousands separators (n/a when missing)."""

    value: int | None


@dataclass(frozen=True)
class Join:
    """Cells shown one after the other in one table cell or note."""

    parts: tuple[Cell, ...]


Cell = Text | Pct | Num | Int | Join


@dataclass(frozen=True)
class Note:
    """A paragraph under (or, with ``before``, over) a table: ``notice`` (a warning box) or
    ``summary`` (a muted line)."""

    kind: Literal["notice", "summary"]
    parts: tuple[Cell, ...]
    before: bool = False


@dataclass(frozen=True)
class ReportTable:
    """A metric's report section as data.

    ``lead`` and ``empty`` are the module's own constant prose and may hold inline markup
    (``<sub>``, ``<code>``, a link to another section); every value from data goes in
    ``rows`` and ``notes`` as cells. ``headers`` are (label, numeric). With no rows the section
    shows ``empty`` (when set) and the notes.
    """

    anchor: str
    title: str
    lead: str
    headers: tuple[tuple[str, bool], ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    notes: tuple[Note, ...] = ()
    empty: str | None = None


@dataclass(frozen=True)
class Section:
    """Where a metric's section sits in the report: its anchor, navigation label and builder.

    ``build`` gives the section as table data (:class:`ReportTable`), shown with the other
    metric sections. A section with charts or per-family matrices is ``drawn`` instead, by the
    report module registered for its anchor (:data:`eval_assets.report.drawn_sections.DRAWERS`:
    the report imports scoring, never the other way), placed right after the report section
    whose anchor is ``after`` (the ranking's neighbours, not the metric sections)."""

    anchor: str
    nav: str
    build: Callable[[Sequence[CellScores]], ReportTable] | None = None
    drawn: bool = False
    after: str | None = None

    def __post_init__(self) -> None:
        if (self.build is None) != self.drawn:
            raise ValueError(f"section {self.anchor!r}: give build (table data) or drawn=True "
                             "(HTML drawn by the report), one of the two")


@dataclass(frozen=True)
class MetricSpec(Generic[R]):
    """One metric, as the pipeline, the leaderboard and the report see it.

    - ``name``: its asset key and its folder under the storage root; ``file``: its result file
      there (the result document, or the not-measured record); ``version``: its code version,
      bumped whenever what it writes changes, so stored results are recomputed.
    - ``score``: the Dagster-free scoring of one cell; ``metadata``: the asset's metadata of a
      result (plain values).
    - ``columns``: its leaderboard columns, in order. ``pool`` fills them for a leaderboard row
      from the row's cells; ``None`` when the leaderboard pools the metric per case (VQA
      accuracy and CircularEval, which are restricted to the common case set).
    - ``section``: its report section; ``None`` when the report shows it with the ranking.
      ``extra_sections``: more of its sections (charts drawn elsewhere in the page).
    - ``label``: its name in prose; ``description``: what it measures (its module's docstring);
      ``describes_frames``: it scores the free-text frame descriptions; ``methods``: how its
      leaderboard columns are computed, (key, text) lines of the leaderboard's ``methods``.
    - ``not_computed``: per recording, the (metric, why) lines of the report's "Not computed"
      section for the cells of that recording.
    - ``order``: where its columns and sections sit among the metrics' (ascending, ties by
      name): :data:`eval_assets.scoring.METRICS` is sorted by it. A new metric left at the
      default comes after the built-in ones.
    """

    name: str
    file: str
    version: str
    result_model: type[R]
    score: Callable[[ScoringInputs], R | NotMeasured]
    needs: frozenset[Need] = frozenset()
    metadata: Callable[[R], dict[str, Any]] = lambda _: {}
    columns: tuple[Column, ...] = ()
    pool: Callable[[Sequence[CellScores]], dict[str, Any]] | None = None
    section: Section | None = None
    extra_sections: tuple[Section, ...] = ()
    not_computed: Callable[[Sequence[CellScores]], list[tuple[str, str]]] | None = None
    describes_frames: bool = False
    label: str = ""
    description: str = ""
    methods: tuple[tuple[str, str], ...] = ()
    order: int = 1000

    @property
    def sections(self) -> tuple[Section, ...]:
        """Every report section of this metric: ``section`` (if any), then ``extra_sections``."""
        return (*(() if self.section is None else (self.section,)), *self.extra_sections)

    def outcome(self, cell: CellScores) -> R | NotMeasured:
        """This metric's entry of ``cell``: its result, or why it was not measured."""
        return cell.outcome(self.name, self.result_model)

    def result(self, cell: CellScores) -> R | None:
        """This metric's result in ``cell``, or None when not measured."""
        return cell.result(self.name, self.result_model)

    def results(self, cells: Sequence[CellScores]) -> list[tuple[CellScores, R]]:
        """The cells with a result of this metric, each with it, in the given order."""
        return [(c, r) for c in cells if (r := self.result(c)) is not None]


class Markdown(str):
    """A metadata value the asset shows as Markdown (a table), not as plain text."""

    __slots__ = ()


def markdown_number(value: float | None) -> str:
    """A figure in a metadata Markdown table: three decimals, or n/a for an empty denominator."""
    return "n/a" if value is None else f"{value:.3f}"


def ordered(cells: Sequence[CellScores]) -> list[CellScores]:
    """Cells in the report's order: by model, then recording."""
    return sorted(cells, key=lambda c: (c.model, c.recording))


def who(cell: CellScores) -> tuple[Cell, Cell]:
    """The model and recording cells that open a per-cell report row."""
    return Text(cell.model, "model"), Text(cell.recording)
