"""The "Label audit" section: disputed cases, overrides and their states, label-error rates."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.report.cards import build_frame_images
from eval_assets.report.html import render_report
from eval_assets.report.label_audit import build_label_audit, label_audit_section, skill_weight
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.scoring.inputs import load_private_dataset
from eval_assets.vqa.labels import read_labels
from eval_assets.vqa.overrides import record_override
from eval_assets_tests.report.builders import THIRDS, YES_NO, result, row, write_dataset

PRESENCE = "frame-000000-green-box-presence"
DIRECTION = "frame-000000-green-box-horizontal_direction"
ABSENT = "frame-000000-red-ball-presence"
GOLD = {PRESENCE: ("presence", "yes", YES_NO), ABSENT: ("presence", "no", YES_NO),
        DIRECTION: ("horizontal_direction", "left", THIRDS)}
# a and b are right everywhere else and agree on "no" where the gold says "yes"; c is wrong
# elsewhere, so its votes weigh nothing.
REPLIES = {"a": {PRESENCE: "no", ABSENT: "no", DIRECTION: "left"},
           "b": {PRESENCE: "no", ABSENT: "no", DIRECTION: "left"},
           "c": {PRESENCE: "yes", ABSENT: "yes", DIRECTION: "right"}}


def _results(gold: dict[str, tuple[str, str, list[str]]]):
    out = []
    for model, reply in REPLIES.items():
        rows = [row(cid, gold[cid][0], gold[cid][1], text, "rec", gold[cid][2])
                for cid, text in reply.items()]
        out.append(result("rec", model, rows))
    return out


def test_skill_is_accuracy_elsewhere_above_chance() -> None:
    assert skill_weight(2, 2, 2) == 1.0
    assert skill_weight(1, 2, 2) == 0.0  # chance on yes/no
    assert skill_weight(0, 2, 3) == 0.0  # below chance weighs nothing, never negative
    assert skill_weight(2, 3, 3) == pytest.approx(0.5)
    assert skill_weight(5, 0, 2) == 0.0


def test_skilled_models_agreeing_against_the_gold_dispute_it(tmp_path: Path) -> None:
    paths = write_dataset(tmp_path)
    overrides = tmp_path / "labels" / "rec.overrides.jsonl"
    audit = build_label_audit(_results(GOLD), {"rec": load_private_dataset(paths["dataset"],
                                                                           overrides)})
    assert [(d.case_id, d.answer, [m for m, _ in d.models]) for d in audit.disputes] == [
        (PRESENCE, "no", ["a", "b"])]
    assert audit.disputes[0].margin == pytest.approx(2.0)
    rates = {r.family: r for r in audit.rates}
    assert (rates["presence"].n, rates["presence"].disputed) == (2, 1)
    assert rates["presence"].interval is not None
    assert rates["presence"].interval.estimate == pytest.approx(0.5)
    assert rates["horizontal_direction"].interval is not None
    assert rates["horizontal_direction"].interval.estimate == 0.0

    frames = build_frame_images(paths["dataset"], {0}, paths["detections"],
                                paths["pointclouds"], recording="rec")
    html = label_audit_section(audit, frames)
    assert PRESENCE in html and "data:image/jpeg;base64," in html
    assert "Wilson" in html and "No label overrides" in html

    # A person agrees with the models: the correction is applied, the case is no longer
    # disputed once scored against it, and the rate counts it as corrected.
    record_override(paths["dataset"], overrides, read_labels(paths["dataset"]),
                    case_id=PRESENCE, answer="no", by="ana", reason="no green box there")
    fixed = {**GOLD, PRESENCE: ("presence", "no", YES_NO)}
    results = _results(fixed)
    audit = build_label_audit(results, {"rec": load_private_dataset(paths["dataset"],
                                                                    overrides)})
    assert audit.disputes == ()
    assert [(rec, s.state) for rec, s in audit.overrides] == [("rec", "applied")]
    rates = {r.family: r for r in audit.rates}
    assert (rates["presence"].disputed, rates["presence"].corrected) == (0, 1)
    text = render_report(build_leaderboard(results), results, [], "t", frames=frames,
                         label_audit=audit)
    assert 'href="#label-audit"' in text and 'id="label-audit"' in text
    assert "Overrides (1 applied, 0 orphaned)" in text and "no green box there" in text


def test_orphaned_overrides_are_listed_and_not_applied(tmp_path: Path) -> None:
    paths = write_dataset(tmp_path)
    overrides = tmp_path / "rec.overrides.jsonl"
    record_override(paths["dataset"], overrides, read_labels(paths["dataset"]),
                    case_id=DIRECTION, answer="right", by="ana", reason="r")
    image = paths["dataset"] / "assets" / "frame-000000.png"
    image.write_bytes(image.read_bytes() + b"\0")  # the frame was replaced
    data = load_private_dataset(paths["dataset"], overrides)
    assert {lab.id: lab.answer for lab in data.labels}[DIRECTION] == "left"
    audit = build_label_audit(_results(GOLD), {"rec": data})
    html = label_audit_section(audit, [])
    assert "1 orphaned" in html and "orphaned: the case" in html and "notice" in html
