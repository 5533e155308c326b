"""The report's "Evidence quality" section: how far each family's gold answers and the detector's
evidence can be trusted, measured against the recording's own truth.

Shown before the family results, so a reviewer reads it before trusting a family's accuracy.
Built from the ``evidence_quality`` records (:mod:`eval_assets.evidence_quality`); recordings
without truth are listed as not measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from eval_assets.evidence_quality import read_evidence_quality
from eval_assets.layout import StorageLayout
from eval_assets.report.markup import NA, count, esc, num, pct, section, table
from eval_assets.schemas.evidence_quality import EvidenceQuality, FamilyQuality

__all__ = ["evidence_quality_section", "load_evidence_quality"]

WRONG_SHOWN = 8  # wrong cases listed per family and recording; the record holds them all

LEAD = (
    "Gold answers come from the detector's evidence. For recordings that carry their own truth "
    "(synthesized or simulated: <code>X.scene.json</code> and <code>X.truth.npz</code>), each "
    "case's gold is compared with the answer the truth gives to the same question. "
    "<b>Wrong gold</b>: the share of checked cases whose gold differs from the truth, or that "
    "cannot be matched or scored (a track matched to no object of its name within the gate, "
    "an object the truth does not show, several objects where the question asks about one) — "
    "each listed with its reason. Numbers are wrong beyond 10 % relative error. Cases on frames "
    "without per-frame truth are counted apart. Read a family's results only where its wrong "
    "gold rate is low. <b>Detection</b>: masks matched to the truth's instance masks at IoU "
    "≥ 0.5; precision and recall count a match only under the right name. <b>Tracks</b>: each "
    "3-D track against its namesake's centre and size.")


def load_evidence_quality(layout: StorageLayout,
                          recordings: Iterable[str]) -> list[EvidenceQuality]:
    """The stored record of each recording that has one, in the order given."""
    records = []
    for recording in recordings:
        record = read_evidence_quality(layout.evidence_quality_dir(recording))
        if record is not None:
            records.append(record)
    return records


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{esc(r)} {n:,}" for r, n in sorted(counts.items(), key=lambda x: -x[1])) \
        or "—"


def _wrong_list(family: FamilyQuality) -> str:
    if not family.wrong_cases:
        return ""
    items = [f"<li><code>{esc(w.case_id)}</code>: gold {esc(w.gold)}, truth "
             f"{esc(w.truth) if w.truth is not None else NA} — {esc(w.reason)}"
             f"{': ' + esc(w.detail) if w.detail else ''}</li>"
             for w in family.wrong_cases[:WRONG_SHOWN]]
    more = len(family.wrong_cases) - WRONG_SHOWN
    if more > 0:
        items.append(f"<li>… and {more} more (evidence_quality.json)</li>")
    return f"<ul>{''.join(items)}</ul>"


def _families(record: EvidenceQuality) -> str:
    rows = []
    for f in record.families:
        if not (f.cases or f.rejected):
            continue
        rows.append([
            esc(f.family), count(f.cases), count(f.checked), count(f.wrong),
            pct(f.wrong_rate), num(f.mean_mra, 3) if f.kind == "spatial" else "",
            _reasons(f.rejected), _reasons(f.not_checked), _wrong_list(f)])
    if not rows:
        return '<p class="empty">No cases.</p>'
    return table([("family", False), ("cases", True), ("checked", True), ("wrong", True),
                  ("wrong gold", True), ("MRA", True), ("rejected (reason n)", False),
                  ("not checked", False), ("wrong cases", False)], rows)


def _detection(record: EvidenceQuality) -> str:
    det = record.detection
    if det is None:
        return ""
    lead = (f"<p>{count(det.frames_checked)} frames with truth; {count(det.detections)} "
            f"detections, {count(det.matched)} matched a truth object, naming accuracy "
            f"{pct(det.naming_accuracy)}, mean mask IoU {num(det.mean_mask_iou, 3)}; precision "
            f"{pct(det.precision)}, recall {pct(det.recall)}"
            f"{'; frames not checked: ' + _reasons(det.frames_not_checked) if det.frames_not_checked else ''}"  # noqa: E501
            f"{'; named otherwise: ' + _reasons(det.confusions) if det.confusions else ''}.</p>")
    rows = [[esc(n.name) + ("" if n.queried else " (not queried)"), count(n.detections),
             count(n.truth_instances), count(n.true_positives), pct(n.precision),
             pct(n.recall), num(n.mean_iou, 3)]
            for n in det.per_name if n.detections or n.truth_instances]
    return lead + table([("name", False), ("detections", True), ("truth", True), ("hits", True),
                         ("precision", True), ("recall", True), ("mask IoU", True)], rows)


def _tracks(record: EvidenceQuality) -> str:
    t = record.tracks
    if t is None:
        return ""
    unmatched = [c for c in t.checks if c.truth_id is None]
    text = (f"<p>Tracks: {t.matched} of {t.tracks} matched (gate: {esc(t.gate)}); centre error "
            f"median {num(t.centre_error_m_median)} m, p90 {num(t.centre_error_m_p90)} m; "
            f"extent error median {num(t.extent_error_m_median)} m, p90 "
            f"{num(t.extent_error_m_p90)} m.")
    if unmatched:
        text += " Unmatched: " + "; ".join(f"{esc(c.track_id)} ({esc(c.reason or '')})"
                                           for c in unmatched) + "."
    if t.missed:
        text += f" No track for: {esc(', '.join(t.missed))}."
    return text + "</p>"


def evidence_quality_section(records: Sequence[EvidenceQuality]) -> str:
    """The section's HTML; empty when no recording has a record."""
    if not records:
        return ""
    parts = []
    for record in records:
        title = f"<h3>{esc(record.recording)}</h3>"
        if record.status != "measured":
            parts.append(f'{title}<p class="empty">Not measured: {esc(record.reason or "")}</p>')
            continue
        wrong, checked = record.wrong_totals()
        summary = (f"<p>Wrong gold over all families: <b>{wrong:,} of {checked:,}</b> checked "
                   f"cases ({pct(wrong / checked if checked else None)}). Detector: "
                   f"{esc(record.detector or 'none')}; truth: "
                   f"{esc(record.truth.generator if record.truth else '')}.</p>")
        parts.append(title + summary + _families(record) + _detection(record) + _tracks(record))
    return section("evidence-quality", "Evidence quality", LEAD, "".join(parts))
