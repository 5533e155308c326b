"""The HTML report: self-contained, deterministic, escaped; every case browsable; no number that
only reflects a prompt format or an empty denominator."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.report.cards import build_case_cards, build_frame_images
from eval_assets.report.case_browser import decode_case_data
from eval_assets.report.coverage import build_coverage
from eval_assets.report.html import MCQ_NOT_MEASURED, render_report, write_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.scoring.chair import ChairScores
from eval_assets_tests.report.builders import (
    THIRDS,
    YES_NO,
    answer,
    judge_scores,
    result,
    row,
    vision_scores,
    write_dataset,
)

EVIL = "<script>alert('x')</script>"
PRESENCE = "frame-000000-green-box-presence"
DIRECTION = "frame-000000-green-box-horizontal_direction"
ABSENT = "frame-000000-red-ball-presence"
MCQ = {"total_mcq_questions": 3, "num_infer_failed": 0, "num_parse_failed": 1,
       "num_correct": 2, "num_incorrect": 0, "pct_correct": 2 / 3}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: dict[str, str] = {}
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs).get("id") or "inline"

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] = self.scripts.get(self._script, "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None


def parse(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    return parser


def report_inputs(tmp_path: Path, *, lettered: bool = False, **judge_fields):
    """Two models on the three-case dataset, every metric present; ``m<1>`` replies with markup."""
    paths = write_dataset(tmp_path)
    replies = {"m<1>": {PRESENCE: EVIL, DIRECTION: "left", ABSENT: "no"},
               "m2": {PRESENCE: "yes", DIRECTION: None, ABSENT: "no"}}
    gold = {PRESENCE: ("presence", "yes", YES_NO), ABSENT: ("presence", "no", YES_NO),
            DIRECTION: ("horizontal_direction", "left", THIRDS)}
    answers, rows, results = {}, {}, []
    chair = ChairScores(chair_i=0.25, chair_s=0.5, hallucinated_objects=["dog"], n_captions=2,
                        ground_truth_source="audit")
    for model, reply in replies.items():
        vrows = [{**row(cid, gold[cid][0], gold[cid][1], text, "rec", gold[cid][2]),
                  "lettered": lettered} for cid, text in reply.items()]
        answers[model] = [answer(model, cid, text) for cid, text in reply.items()]
        rows[model] = vqa_accuracy(vrows).rows
        judge = judge_scores([{"score": 8}, {"error": "e", "score": None}])
        results.append(result(
            "rec", model, vrows, mcq=MCQ, lenient=1.0,
            judge=judge.model_copy(update=judge_fields), vision=vision_scores(2, 0.61, 1),
            chair=chair))
    judged = {"m2": [{"id": "frame-000000", "score": 6, "reasoning": f"Said {EVIL}",
                      "gt": "A green box.", "pred": "A box.", "model_used": "judge-1"}]}
    cards = build_case_cards(paths["dataset"], answers, rows, judged)
    frames = build_frame_images(paths["dataset"], {c.frame_index for c in cards},
                                paths["detections"], paths["pointclouds"], recording="rec")
    return build_leaderboard(results), results, cards, frames


def render(tmp_path: Path, title: str = "Bench", **kwargs) -> str:
    leaderboard, results, cards, frames = report_inputs(tmp_path, **kwargs)
    return render_report(leaderboard, results, cards, title, frames=frames)


def section(text: str, anchor: str) -> str:
    return text.split(f'id="{anchor}"', 1)[1].split("</section>", 1)[0]


def test_report_is_self_contained_with_every_case_and_one_image_per_frame(tmp_path) -> None:
    text = render(tmp_path, "Bench <nightly>")
    doc = parse(text)
    charts = [a for t, a in doc.tags if t == "img" and a.get("class") == "chart"]
    assert len(charts) == 3
    for attrs in charts:
        assert base64.b64decode(attrs["src"].split(",", 1)[1]).startswith(b"\x89PNG")
    # Plain inline script only: nothing is loaded from anywhere.
    scripts = [a for t, a in doc.tags if t == "script"]
    assert all("src" not in a for a in scripts)
    assert not any(t in ("link", "iframe") for t, _ in doc.tags)
    assert not re.search(r'(src|href)="(?!data:|#)', text), "no external resources"
    for anchor in ("headline", "coverage", "comparisons", "families", "recordings", "nights",
                   "not-computed", "pope", "mcq", "judge", "vision", "chair", "cases", "methods"):
        assert f'id="{anchor}"' in text
    assert "Bench &lt;nightly&gt;" in text and "m&lt;1&gt;" in text
    cases = decode_case_data(json.loads(doc.scripts["case-data"]))
    # All three cases (not a sample) plus the described frame, each with both models' answers.
    assert [c["id"] for c in cases] == [PRESENCE, DIRECTION, ABSENT, "frame-000000"]
    assert [a["model"] for a in cases[0]["answers"]] == ["m2", "m<1>"]
    statuses = {a["status"] for c in cases for a in c["answers"]}
    assert statuses == {"correct", "parse_failure", "failed_call", "judged"}
    assert cases[0]["frame_key"] == "rec#0"
    assert cases[0]["recording"] == "rec" and cases[0]["family"] == "presence"
    judged = [a for c in cases for a in c["answers"] if a["status"] == "judged"]
    assert judged and all(isinstance(a["judge"]["reasoning"], str) for a in judged)
    frames = json.loads(doc.scripts["frame-data"])
    assert list(frames) == ["rec#0"]  # one frame, stored once for its four cases
    for key in ("src", "plain"):
        assert frames["rec#0"][key].startswith("data:image/jpeg;base64,/9j/")
    assert "3 LiDAR points" in frames["rec#0"]["note"]


def test_every_string_is_escaped_in_html_and_in_the_case_data(tmp_path) -> None:
    text = render(tmp_path, EVIL)
    assert "<script>alert" not in text and "</script>alert" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    # Inside the JSON blob, "<" is \u003c, so no string can close the script element.
    blob = parse(text).scripts["case-data"]
    assert "<" not in blob and "\\u003cscript\\u003ealert" in blob
    assert EVIL in json.dumps(json.loads(blob), ensure_ascii=False)


def test_report_bytes_are_deterministic_and_written_atomically(tmp_path) -> None:
    first = render(tmp_path / "a")
    assert first == render(tmp_path / "b")
    assert "generated" not in first.split("</header>")[0]
    leaderboard, results, cards, frames = report_inputs(tmp_path / "c")
    stamped = render_report(leaderboard, results, cards, "Bench", frames=frames,
                            generated_at="2025-01-02 03:04 UTC")
    assert "generated 2025-01-02 03:04 UTC" in stamped
    out = write_report(first, tmp_path / "out" / "report.html")
    assert out.read_text(encoding="utf-8") == first
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def test_mcq_of_choice_text_prompts_is_not_reported_as_zero(tmp_path) -> None:
    body = section(render(tmp_path), "mcq")
    assert "AVLM MCQ not measured: cases are prompted for the choice text" in body
    assert MCQ_NOT_MEASURED.split(":")[0] in body
    assert "<b>66.7%</b>" not in body and "Strict correct" not in body
    lettered = section(render(tmp_path / "l", lettered=True), "mcq")
    assert "<b>66.7%</b>" in lettered and "not measured" not in lettered


def test_empty_denominators_are_na_and_small_families_are_marked(tmp_path) -> None:
    text = render(tmp_path)
    # A model that never says yes has no precision (and so no F1): n/a, not 0.0%.
    rows = [row("a", "presence", "yes", "no", "rec"), row("b", "presence", "no", "no", "rec")]
    never_yes = [result("rec", "n", rows)]
    pope = section(render_report(build_leaderboard(never_yes), never_yes, [], "t"), "pope")
    cells = re.findall(r'<td class="num">(.*?)</td>', pope)
    assert cells[1:6] == ["50.0%", '<span class="na">n/a</span>', "0.0%",
                          '<span class="na">n/a</span>', "0.0%"]
    # Every family here has fewer than 20 cases: faded and marked in the table.
    families = section(text, "families")
    assert families.count("n&lt;20</span>") >= 2 and 'class="lown"' in families


def test_paired_comparison_is_shown_with_mcnemar_and_mdd(tmp_path) -> None:
    body = section(render(tmp_path), "comparisons")
    assert "m2</span> vs" in body or "m&lt;1&gt;</span> vs" in body
    assert "McNemar" in body and "MDD" in body and "no significant difference" in body


def test_judge_status_replaces_a_missing_mean_and_self_judging_is_flagged(tmp_path) -> None:
    status = "withheld: judge failed calibration (agreement 40%)"
    body = section(render(tmp_path, status=status, withheld=True, mean_score=None,
                          median_score=None, min_score=None, max_score=None, self_judging=True,
                          self_judging_models=["m2"], failure_counts={"missing_gt": 1}),
                   "judge")
    assert status in body and "self-judging" in body
    assert "8.00" not in body
    assert "missing_gt 1" in body


def test_missing_annotations_say_what_was_not_computed() -> None:
    rows = [row("a", "presence", "yes", "yes", "rec")]
    chair = ChairScores(chair_i=0.5, chair_s=1.0, hallucinated_objects=["chair"], n_captions=1,
                        ground_truth_source="audit")
    base = result("rec", "m", rows, chair=chair,
                  judge=judge_scores([{"error": "no reference", "score": None}]))
    described = base.model_copy(update={
        "predictions": base.predictions.model_copy(update={"descriptions": 3})})
    text = render_report(build_leaderboard([described]), [described], [], "t")
    body = section(text, "not-computed")
    assert "VisionSimilarity" in body and "no human annotations" in body
    assert "LLM judge reference" in body and "missing_gt" in body
    assert "CHAIR truth source" in body and "detector evidence" in body


def test_empty_inputs_render_explanations_not_errors() -> None:
    text = render_report(build_leaderboard([]), [], [], "Empty")
    assert "No results." in text and "No case cards." in text


@pytest.mark.parametrize("section_id", ["pope", "judge", "vision", "chair"])
def test_missing_metrics_say_so(section_id) -> None:
    results = [result("rec", "m", [row("a", "horizontal_direction", "left", "left", "rec",
                                       THIRDS)])]
    body = section(render_report(build_leaderboard(results), results, [], "t"), section_id)
    assert 'class="empty"' in body


@pytest.mark.slow
# `make test` installs Chromium and sets EVAL_ASSETS_REQUIRE_CHROMIUM, so there it cannot skip.
@pytest.mark.skipif(shutil.which("chromium") is None
                    and not os.environ.get("EVAL_ASSETS_REQUIRE_CHROMIUM"),
                    reason="needs headless Chromium (Debian package chromium)")
def test_the_case_filter_works_in_a_real_browser(tmp_path) -> None:
    path = write_report(render(tmp_path), tmp_path / "report.html")

    def dom(fragment: str) -> str:
        with tempfile.TemporaryDirectory() as profile:
            done = subprocess.run(
                ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", "--dump-dom",
                 f"file://{path}{fragment}"],
                capture_output=True, text=True, timeout=120, check=True)
        return done.stdout

    everything = dom("")
    assert 'data-matching="4"' in everything
    assert len(re.findall(r'<article class="case"', everything)) == 4
    # Preselected by the address: m2's failed calls only, and only m2's answer is shown.
    failed = dom("#cases?model=m2&outcome=failed_call")
    assert 'data-matching="1"' in failed
    (card,) = re.findall(r'<article class="case" data-case="([^"]+)"', failed)
    assert card == DIRECTION
    assert re.findall(r'<div class="who"><b>([^<]+)</b>', failed) == ["m2"]
    # The escaped reply is text, not markup.
    parse_failures = dom("#cases?outcome=parse_failure&family=presence")
    assert 'data-matching="1"' in parse_failures
    assert "&lt;script&gt;alert" in parse_failures and "<script>alert" not in parse_failures


def _cases(recording: str, n: int, right: int) -> list:
    return [row(f"c{i}", "presence", "yes", "yes" if i < right else "no", recording,
                frame_index=i) for i in range(n)]


def test_headline_ranks_on_common_cases_and_warns_about_missing_and_stale_cells() -> None:
    results = [result("kitchen", "full", _cases("kitchen", 6, 2), sha="b" * 64),
               result("kitchen", "half", _cases("kitchen", 2, 1), sha="b" * 64),
               result("hallway", "full", _cases("hallway", 3, 3)),
               result("hallway", "old", _cases("hallway", 3, 0), sha="a" * 64)]
    cover = build_coverage(results, ["hallway", "kitchen"], ["full", "half", "old"],
                           {"kitchen": "b" * 64, "hallway": "0" * 64})
    text = render_report(build_leaderboard(results, coverage=cover), results, [], "t",
                         coverage=cover)
    headline = section(text, "headline")
    assert "Headline: mean over question families on 2 common cases" in headline
    box = headline.split('class="warnbox"', 1)[1].split("</div>", 1)[0]
    assert "Ranked on 2 common cases (2 frames) of 1 recording (kitchen)" in box
    assert "missing: (hallway, half), (kitchen, old)" in box
    assert "stale (excluded): (hallway, old: dataset aaaaaaaaaaaa" in box
    ranked = headline.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    # On the common cases "full" is 2/2, "half" 1/2: full first, both with n = 2.
    assert ranked.index(">full<") < ranked.index(">half<")
    assert "100.0%" in ranked and "50.0%" in ranked
    # The full-coverage number of "full" (5 of 9) is shown, labelled not comparable.
    assert "not a ranking" in headline and "not comparable" in headline
    assert "55.6%" in headline.split("not a ranking", 1)[1]
    matrix = section(text, "coverage")
    assert 'class="cov-ok">ok (6 cases)' in matrix and 'class="cov-ok">ok (2 of 6 cases)' in matrix
    assert 'class="cov-missing">missing' in matrix and 'class="cov-stale">stale' in matrix
    # Stale results are in no section: "old" appears only in the coverage lists.
    assert ">old<" not in section(text, "pope") and ">old<" not in section(text, "recordings")
    assert "ranked on 2 common cases" in text.split("</header>", 1)[0]


def test_without_common_cases_there_is_no_ranking() -> None:
    results = [result("rec-a", "m1", _cases("rec-a", 2, 2)),
               result("rec-b", "m2", _cases("rec-b", 2, 0))]
    text = render_report(build_leaderboard(results), results, [], "t")
    headline = section(text, "headline")
    assert "No ranking: no case is common to all 2 models (m1, m2)" in headline
    assert "No ranking: no case is common to every model" in headline
    assert "<h3>Every case each model answered: not a ranking</h3>" in headline
    assert "No ranking" in section(text, "families")
    assert "no ranking" in text.split("</header>", 1)[0]


def test_headline_leads_with_the_mean_over_families_and_each_familys_n() -> None:
    # Two gold answers per family, so each is informative: presence answered all right (score
    # 100%), closest object always "b" (a constant: its chance, 50%).
    rows = [row(f"p{i}", "presence", ("yes", "no")[i % 2], ("yes", "no")[i % 2], "r",
                frame_index=i) for i in range(30)]
    rows += [row(f"c{i}", "closest_object", "ab"[i % 2], "b", "r", ["a", "b"], frame_index=40 + i)
             for i in range(20)]
    rows.append(row("d", "object_distance", "a", "a", "r", ["a", "b"], frame_index=90))
    results = [result("r", "m", rows)]
    text = render_report(build_leaderboard(results), results, [], "t")
    headline = section(text, "headline")
    assert "Mean over families [95% CI]" in headline and "Pooled accuracy [95% CI]" in headline
    assert "<b>75.0% " in headline  # (100% + 50%) / 2, bold: the headline number
    assert "80.4% " in headline  # raw pooled: 41 of 51
    assert re.search(r"Families \(n common cases\):</b> presence 30 · object distance 1"
                     r".*not in the mean</span> · closest object 20</p>", headline)
    # The prior-free CAA beside the headline, (75% - 50%) / (1 - 50%), and SITE's CAA of the
    # raw pooled accuracy apart from it: (41 - 51/2) / (51 - 51/2) = 15.5 / 25.5.
    assert "Chance-adjusted (CAA), pts" in headline and ">+50.0<" in headline
    assert "Raw CAA, pts" in headline and f">{15.5 / 25.5 * 100:+.1f}<" in headline
    # The frequency baseline is ranked beside the model, marked, at the chance exactly.
    assert "Chance level (frequency)</span> <span class=\"ci\">baseline (frequency)" in headline
    assert ">+0.0<" in headline
