"""Stage 6b: evidence quality — the detector's evidence and the gold answers against the
recording's own truth (synthesized or simulated recordings: ``X.scene.json`` + ``X.truth.npz``).

Every recording partition materializes it: one without truth sidecars gets a ``no_truth`` record
and says so in its metadata, rather than failing the run or being left missing (a missing
partition would be requested again and again by the automation condition). Its figures are
the report's "Evidence quality" section.

No ``from __future__ import annotations`` here: Dagster 1.13 compares the ``context`` annotation
with the class itself and rejects the string a postponed annotation leaves (dagster#26837).
"""

from typing import Any

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.evidence_quality import measure_stored, write_evidence_quality
from eval_assets.schemas.evidence_quality import EvidenceQuality

GROUP = "vqa"


def _num(value: float | None, digits: int = 3) -> float | str:
    return "n/a" if value is None else round(value, digits)


def headline(record: EvidenceQuality) -> dict[str, Any]:
    """The record's figures as Dagster metadata values (plain numbers where measured)."""
    if record.status != "measured":
        return {"status": "no truth", "reason": record.reason or ""}
    det, tracks = record.detection, record.tracks
    assert det is not None and tracks is not None
    wrong, checked = record.wrong_totals()
    return {
        "status": "measured",
        "detection_precision": _num(det.precision),
        "detection_recall": _num(det.recall),
        "naming_accuracy": _num(det.naming_accuracy),
        "mean_mask_iou": _num(det.mean_mask_iou),
        "frames_checked": det.frames_checked,
        "track_centre_error_m_median": _num(tracks.centre_error_m_median),
        "track_centre_error_m_p90": _num(tracks.centre_error_m_p90),
        "track_extent_error_m_median": _num(tracks.extent_error_m_median),
        "track_extent_error_m_p90": _num(tracks.extent_error_m_p90),
        "tracks_matched": f"{tracks.matched} of {tracks.tracks}",
        "wrong_gold": f"{wrong} of {checked}",
        "wrong_gold_per_family": MetadataValue.json({
            f.family: {"wrong": f.wrong, "checked": f.checked, "cases": f.cases,
                       "rate": None if f.wrong_rate is None else round(f.wrong_rate, 4)}
            for f in record.families}),
    }


@asset(key=keys.EVIDENCE_QUALITY, partitions_def=recordings_partitions, group_name=GROUP,
       deps=[keys.RECTIFIED_FRAMES, keys.DETECTIONS_MASKS, keys.OBJECT_TRACKS,
             keys.PRIVATE_LABELS],
       code_version="1", automation_condition=RECOMPUTE, kinds={"json"}, owners=OWNERS,
       tags={"visibility": "private"})
def evidence_quality(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Detection precision/recall and mask IoU per name, track centre and extent errors, and
    each family's wrong-gold rate and yield, against the recording's truth (when it has one)."""
    key = context.partition_key
    layout = storage.layout()
    record = measure_stored(key, storage.recording_file(key), layout.rectified_frames_dir(key),
                            layout.detections_dir(key), layout.tracks_dir(key),
                            layout.dataset_dir(key))
    path = write_evidence_quality(layout.evidence_quality_dir(key), record)
    if record.status != "measured":
        context.log.info(f"evidence_quality[{key}]: not measured: {record.reason}")
    return MaterializeResult(metadata={**headline(record),
                                       "record": MetadataValue.path(str(path))})
