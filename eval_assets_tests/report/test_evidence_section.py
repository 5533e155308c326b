"""The report's "Evidence quality" section: per family wrong gold with n and reasons, detection
and track figures, before the family results; recordings without truth listed as such."""

from __future__ import annotations

from pathlib import Path

from eval_assets.evidence_quality import write_evidence_quality
from eval_assets.layout import StorageLayout
from eval_assets.report.evidence_section import evidence_quality_section, load_evidence_quality
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.evidence_quality import (
    DetectionQuality,
    EvidenceQuality,
    FamilyQuality,
    NameDetectionQuality,
    TrackQuality,
    WrongCase,
)
from eval_assets_tests.report.builders import result, row


def _record() -> EvidenceQuality:
    wrong = WrongCase(case_id="spatial-size-blue-box", gold="36", truth=None,
                      reason="outside_gate", detail="the nearest 'blue box' is 2.00 m away")
    return EvidenceQuality(
        recording="synthetic", status="measured", detector="color_shape hsv-shape/2",
        detection=DetectionQuality(
            iou_threshold=0.5, min_truth_pixels=50, frames_checked=3, detections=4, matched=3,
            correctly_named=2, naming_accuracy=2 / 3, mean_mask_iou=0.9, precision=0.5,
            recall=2 / 3, per_name=[NameDetectionQuality(
                name="blue box", queried=True, detections=4, truth_instances=3,
                true_positives=2, precision=0.5, recall=2 / 3, mean_iou=0.95)],
            confusions={"red box -> blue box": 1}),
        tracks=TrackQuality(gate="0.5 m", tracks=2, matched=1, centre_error_m_median=0.05,
                            centre_error_m_p90=0.05, extent_error_m_median=0.02,
                            extent_error_m_p90=0.02),
        families=[
            FamilyQuality(family="presence", kind="dimos", cases=10, checked=10, wrong=0,
                          wrong_rate=0.0, rejected={"name_not_queried": 2}),
            FamilyQuality(family="object_size_cm", kind="spatial", cases=4, checked=4, wrong=1,
                          wrong_rate=0.25, mean_mra=0.75, rejected={"ambiguous_name": 3},
                          wrong_cases=[wrong])])


def test_the_section_lists_wrong_gold_per_family_with_reasons() -> None:
    html = evidence_quality_section([_record(), EvidenceQuality(
        recording="field", status="no_truth", reason="no truth beside field.db")])
    assert 'id="evidence-quality"' in html
    assert "1 of 14</b> checked cases (7.1%)" in html
    assert "25.0%" in html and "ambiguous_name 3" in html
    assert "spatial-size-blue-box" in html and "outside_gate" in html
    assert "red box -&gt; blue box 1" in html
    assert "centre error median 0.05 m" in html
    assert "Not measured: no truth beside field.db" in html
    assert evidence_quality_section([]) == ""


def test_the_report_shows_it_before_the_family_results(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    write_evidence_quality(layout.evidence_quality_dir("synthetic"), _record())
    records = load_evidence_quality(layout, ["synthetic", "never-built"])
    assert [r.recording for r in records] == ["synthetic"]
    cell = result("synthetic", "m", [row("c0", "presence", "yes", "yes", "synthetic")])
    html = render_report(build_leaderboard([cell]), [cell], [], "t", evidence_quality=records)
    assert html.index('id="evidence-quality"') < html.index('id="families"')
    assert 'href="#evidence-quality"' in html
    assert 'id="evidence-quality"' not in render_report(build_leaderboard([cell]), [cell], [],
                                                        "t")
