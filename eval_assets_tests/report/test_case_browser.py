"""The case browser shows each case's bias score and filters by family, model, right or wrong
and the bias audit's blind-solvable flag (plain inline script, nothing fetched)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.report.cards import build_case_cards, build_frame_images
from eval_assets.report.case_browser import decode_case_data
from eval_assets.report.html import render_report, write_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.vqa import DATASET_AUDIT, dumps_line
from eval_assets.vqa.bias import AUDIT_BIAS_CASES, CaseBias
from eval_assets_tests.report.builders import THIRDS, YES_NO, answer, result, row, write_dataset

PRESENCE = "frame-000000-green-box-presence"
DIRECTION = "frame-000000-green-box-horizontal_direction"
ABSENT = "frame-000000-red-ball-presence"
GOLD = {PRESENCE: ("presence", "yes", YES_NO), ABSENT: ("presence", "no", YES_NO),
        DIRECTION: ("horizontal_direction", "left", THIRDS)}


def _report(tmp_path: Path, *, audit: bool = True) -> str:
    """Two models on the three-case dataset; with ``audit``, the bias audit flags ABSENT (a
    blind guess says "no") and could not score DIRECTION."""
    paths = write_dataset(tmp_path)
    if audit:
        lines = [CaseBias(id=PRESENCE, family="presence", bias_score=0.25, flagged=False),
                 CaseBias(id=ABSENT, family="presence", bias_score=0.93, flagged=True),
                 CaseBias(id=DIRECTION, family="horizontal_direction", bias_score=None,
                          flagged=False)]
        (paths["dataset"] / DATASET_AUDIT / AUDIT_BIAS_CASES).write_text(
            "".join(dumps_line(c) + "\n" for c in lines))
    replies = {"m1": {PRESENCE: "yes", DIRECTION: "right", ABSENT: "no"},
               "m2": {PRESENCE: "no", DIRECTION: "left", ABSENT: "no"}}
    answers, rows, results = {}, {}, []
    for model, reply in replies.items():
        vrows = [row(cid, GOLD[cid][0], GOLD[cid][1], text, "rec", GOLD[cid][2])
                 for cid, text in reply.items()]
        answers[model] = [answer(model, cid, text) for cid, text in reply.items()]
        rows[model] = vqa_accuracy(vrows).rows
        results.append(result("rec", model, vrows))
    cards = build_case_cards(paths["dataset"], answers, rows)
    frames = build_frame_images(paths["dataset"], {c.frame_index for c in cards},
                                paths["detections"], paths["pointclouds"], recording="rec")
    return render_report(build_leaderboard(results), results, cards, "t", frames=frames)


def _case_data(text: str) -> list[dict]:
    blob = text.split('<script type="application/json" id="case-data">', 1)[1].split(
        "</script>", 1)[0]
    return decode_case_data(json.loads(blob))


def test_each_case_carries_its_bias_score_and_flag_and_the_filters_are_offered(
        tmp_path: Path) -> None:
    text = _report(tmp_path)
    cases = {c["id"]: c for c in _case_data(text)}
    assert (cases[ABSENT]["bias"], cases[ABSENT]["solvable"]) == (0.93, True)
    assert (cases[PRESENCE]["bias"], cases[PRESENCE]["solvable"]) == (0.25, False)
    assert (cases[DIRECTION]["bias"], cases[DIRECTION]["solvable"]) == (None, False)
    for name in ("model", "family", "recording", "outcome", "result", "blind", "sort"):
        assert f'<select id="f-{name}">' in text
    assert "flagged (1 cases)" in text and "not flagged (2)" in text
    # Without the audit, no case has a score or a flag (not "not flagged").
    bare = _case_data(_report(tmp_path / "bare", audit=False))
    assert all(c["bias"] is None and c["solvable"] is None for c in bare)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None
                    and not os.environ.get("EVAL_ASSETS_REQUIRE_CHROMIUM"),
                    reason="needs headless Chromium (Debian package chromium)")
def test_the_right_wrong_and_blind_filters_work_in_a_real_browser(tmp_path: Path) -> None:
    path = write_report(_report(tmp_path), tmp_path / "report.html")

    def dom(fragment: str) -> str:
        with tempfile.TemporaryDirectory() as profile:
            done = subprocess.run(
                ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", "--dump-dom",
                 f"file://{path}{fragment}"],
                capture_output=True, text=True, timeout=120, check=True)
        return done.stdout

    def shown(fragment: str) -> list[str]:
        return re.findall(r'<article class="case" data-case="([^"]+)"', dom(fragment))

    assert shown("#cases?blind=yes") == [ABSENT]
    assert shown("#cases?blind=unscored") == [DIRECTION]
    # m1 is wrong on the direction, m2 on the green box.
    assert shown("#cases?model=m1&result=wrong") == [DIRECTION]
    assert shown("#cases?model=m2&result=wrong&family=presence") == [PRESENCE]
    assert shown("#cases?result=right&blind=no") == [PRESENCE, DIRECTION]
    # Sorted by bias score: the flagged case first, the unscored one last.
    assert shown("#cases?sort=bias") == [ABSENT, PRESENCE, DIRECTION]
    page = dom("#cases?sort=bias")
    assert "bias score 0.93" in page and ">blind-solvable<" in page
