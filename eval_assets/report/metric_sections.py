"""The report's metric sections, rendered from each metric's table data
(:class:`eval_assets.scoring.spec.ReportTable`), and the "Not computed" section gathered from
each metric's reasons. This module knows no metric: it iterates :data:`eval_assets.scoring.
METRICS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eval_assets.report.markup import count, esc, num, pct, section, table
from eval_assets.schemas.results import CellScores
from eval_assets.scoring import METRICS
from eval_assets.scoring.inputs import Annotations
from eval_assets.scoring.spec import (
    Cell,
    Int,
    Join,
    Note,
    Num,
    Pct,
    ReportTable,
    Text,
    ordered,
)

NOT_COMPUTED_LEAD = (
    "VisionSimilarity, the LLM judge and CHAIR compare free-text frame descriptions with human "
    "annotations (<code>data/annotations/&lt;recording&gt;.jsonl</code>). Where a recording has "
    "none, this is what could not be computed, and why; an annotation whose image is no frame "
    "of the recording's dataset is listed here too, never attached to another frame.")


def render_cell(cell: Cell) -> str:
    """One table cell (or note part) as HTML; every text is escaped."""
    if isinstance(cell, Text):
        text = esc(cell.text)
        if cell.style is None:
            return text
        if cell.style == "b":
            return f"<b>{text}</b>"
        title = f' title="{esc(cell.title)}"' if cell.title else ""
        return f'<span class="{cell.style}"{title}>{text}</span>'
    if isinstance(cell, Pct):
        shown = pct(cell.value, cell.digits)
        return f"<b>{shown}</b>" if cell.bold else shown
    if isinstance(cell, Num):
        return num(cell.value, cell.digits)
    if isinstance(cell, Int):
        return count(cell.value)
    if isinstance(cell, Join):
        return "".join(render_cell(part) for part in cell.parts)
    raise TypeError(f"not a report cell: {cell!r}")


def _note(note: Note) -> str:
    return f'<p class="{note.kind}">{"".join(render_cell(p) for p in note.parts)}</p>'


def render_table(data: ReportTable) -> str:
    """A metric's section: the table (notes marked ``before`` over it, the others under it), or
    with no rows its ``empty`` text and the notes."""
    before = "".join(_note(n) for n in data.notes if n.before)
    after = "".join(_note(n) for n in data.notes if not n.before)
    if data.rows:
        rows = [[render_cell(c) for c in row] for row in data.rows]
        body = before + table(list(data.headers), rows) + after
    else:
        empty = f'<p class="empty">{data.empty}</p>' if data.empty else ""
        body = empty + before + after
    return section(data.anchor, data.title, data.lead, body)


def metric_sections(cells: Sequence[CellScores]) -> list[tuple[str, str, str]]:
    """(anchor, navigation label, HTML) of every metric whose section is table data, in
    METRICS order (the sections drawn beside the ranking are
    :func:`eval_assets.report.drawn_sections.drawn_sections`)."""
    return [(s.anchor, s.nav, render_table(s.build(cells)))
            for spec in METRICS for s in spec.sections if s.build is not None]


def dropped_annotations_text(annotations: Annotations) -> str:
    """What a recording's unmatched annotations are, which frames, and the fix, in one line."""
    rows = sorted(annotations.unmatched, key=lambda a: a.frame_index)
    shown = ", ".join(str(a.frame_index) for a in rows[:_FRAMES_SHOWN])
    more = f" and {len(rows) - _FRAMES_SHOWN} more" if len(rows) > _FRAMES_SHOWN else ""
    return (f"{len(rows)} annotation{'s' if len(rows) != 1 else ''} not used (annotated "
            f"frame_index {shown}{more}): the annotated image is no frame of the dataset (the "
            "recording was replaced or its frame selection changed), so the description metrics "
            f"did not use {'them' if len(rows) != 1 else 'it'}. Fix: annotate the current "
            f"frames in {annotations.source}")


_FRAMES_SHOWN = 20


def not_computed_section(cells: Sequence[CellScores],
                         dropped: Mapping[str, Annotations] | None = None) -> str:
    """What could not be computed for want of descriptions or human annotations, and why, per
    recording: each metric's own reasons, and the annotations dropped because their image is no
    frame of the recording's dataset (``dropped``, by recording:
    :func:`eval_assets.scoring.inputs.unmatched_annotations`)."""
    describing = ", ".join(spec.label for spec in METRICS if spec.describes_frames)
    dropped = dropped or {}
    rows = []
    for recording in sorted({c.recording for c in cells}):
        mine = [c for c in ordered(cells) if c.recording == recording]
        if recording in dropped:
            rows.append([esc(recording), "human annotations",
                         esc(dropped_annotations_text(dropped[recording]))])
        if not sum(c.predictions.descriptions for c in mine):
            rows.append([esc(recording), esc(describing),
                         "not computed: no frame descriptions were collected"])
            continue
        for spec in METRICS:
            if spec.not_computed is not None:
                rows += [[esc(recording), esc(metric), esc(why)]
                         for metric, why in spec.not_computed(mine)]
    if not rows:
        return section("not-computed", "Not computed", NOT_COMPUTED_LEAD,
                       '<p class="summary">Every recording has human annotations: nothing was '
                       "left out.</p>")
    return section("not-computed", "Not computed, and why", NOT_COMPUTED_LEAD, table(
        [("Recording", False), ("Metric", False), ("Status", False)], rows))
