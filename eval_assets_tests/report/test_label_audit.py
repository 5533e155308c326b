"""The "Label audit" section: disputed cases, overrides and their states, label-error rates."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from eval_assets.report.cards import build_frame_images
from eval_assets.report.html import render_report
from eval_assets.report.label_audit import (
    baseline_elsewhere,
    build_label_audit,
    label_audit_section,
    skill_weight,
)
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
# Four more presence cases, two "yes" and two "no", so that skill on presence can be told from
# always giving one answer.
MORE = {f"frame-000000-{name.replace(' ', '-')}-presence": ("presence", gold, YES_NO)
        for name, gold in (("blue box", "yes"), ("blue ball", "no"), ("red box", "yes"),
                           ("green ball", "no"))}
GOLD = {**GOLD, **MORE}
# a and b are right everywhere else and agree on "no" where the gold says "yes"; c is wrong
# elsewhere, so its votes weigh nothing.
REPLIES = {"a": {PRESENCE: "no", ABSENT: "no", DIRECTION: "left"},
           "b": {PRESENCE: "no", ABSENT: "no", DIRECTION: "left"},
           "c": {PRESENCE: "yes", ABSENT: "yes", DIRECTION: "right"}}
for _cid, (_, _gold, _) in MORE.items():
    REPLIES["a"][_cid] = REPLIES["b"][_cid] = _gold
    REPLIES["c"][_cid] = "no" if _gold == "yes" else "yes"


def _add_cases(dataset: Path, gold: dict[str, tuple[str, str, list[str]]]) -> None:
    """Append the cases of ``MORE`` to the builder's three-case dataset (public, labels, audit)."""
    for cid, (family, answer, choices) in gold.items():
        if cid not in MORE:
            continue
        name = " ".join(cid.split("-")[2:-1])
        case = {"id": cid, "image": "assets/frame-000000.png",
                "question": f"Does the image contain any {name}?", "choices": choices}
        label = {"id": cid, "answer": answer, "family": family, "frame_index": 0,
                 "object_names": [name], "choices": choices, "evidence": {}}
        for file, line in (("cases.jsonl", case), ("labels.jsonl", {"id": cid, "answer": answer}),
                           ("audit/labels.jsonl", label)):
            with (dataset / file).open("a") as out:
                out.write(json.dumps(line) + "\n")


def _results(gold: dict[str, tuple[str, str, list[str]]],
             replies: dict[str, dict[str, str]] | None = None):
    out = []
    for model, reply in (replies or REPLIES).items():
        rows = [row(cid, gold[cid][0], gold[cid][1], text, "rec", gold[cid][2])
                for cid, text in reply.items()]
        out.append(result("rec", model, rows))
    return out


def test_skill_is_accuracy_elsewhere_above_the_frequency_baseline() -> None:
    assert skill_weight(2, 2, 0.5) == 1.0
    assert skill_weight(1, 2, 0.5) == 0.0  # no better than the commonest answer
    assert skill_weight(0, 2, 1 / 3) == 0.0  # below it weighs nothing, never negative
    assert skill_weight(2, 3, 1 / 3) == pytest.approx(0.5)
    assert skill_weight(5, 0, 0.5) == 0.0
    assert skill_weight(3, 3, 1.0) == 0.0  # every other case has one answer: no evidence


def test_baseline_is_the_commonest_answer_among_the_other_cases() -> None:
    answers = Counter({"no": 3, "yes": 1})
    assert baseline_elsewhere(answers, "yes") == 1.0  # the others are all "no"
    assert baseline_elsewhere(answers, "no") == pytest.approx(2 / 3)
    assert baseline_elsewhere(Counter({"yes": 1}), "yes") == 1.0


def test_models_agreeing_on_a_habit_dispute_nothing(tmp_path: Path) -> None:
    # Two blind models answer "no" to every presence question: on each "yes" case they are
    # perfect elsewhere only because the others are mostly "no"; that is not skill.
    # With five "no" and one "yes", rescaling from chance would give them skill 1.
    gold = {**GOLD, **{cid: ("presence", "no", YES_NO) for cid in MORE}}
    paths = write_dataset(tmp_path)
    _add_cases(paths["dataset"], gold)
    presence = [cid for cid, (family, _, _) in gold.items() if family == "presence"]
    habit = {m: {cid: "no" for cid in presence} for m in ("a", "b")}
    audit = build_label_audit(_results(gold, habit),
                              {"rec": load_private_dataset(paths["dataset"], tmp_path / "o")})
    assert audit.disputes == ()


def test_skilled_models_agreeing_against_the_gold_dispute_it(tmp_path: Path) -> None:
    paths = write_dataset(tmp_path)
    _add_cases(paths["dataset"], GOLD)
    overrides = tmp_path / "labels" / "rec.overrides.jsonl"
    audit = build_label_audit(_results(GOLD), {"rec": load_private_dataset(paths["dataset"],
                                                                           overrides)})
    assert [(d.case_id, d.answer, [m for m, _ in d.models]) for d in audit.disputes] == [
        (PRESENCE, "no", ["a", "b"])]
    assert audit.disputes[0].margin == pytest.approx(2.0)
    rates = {r.family: r for r in audit.rates}
    assert (rates["presence"].n, rates["presence"].disputed) == (6, 1)
    assert rates["presence"].interval is not None
    assert rates["presence"].interval.estimate == pytest.approx(1 / 6)
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
