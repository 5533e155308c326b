"""The HTML report: self-contained, deterministic, escaped, with charts, sections and cards."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import pytest

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.report.cards import build_case_cards
from eval_assets.report.html import render_report, write_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.results import ChairScores
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


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(text)
    return parser.tags


def report_inputs(tmp_path):
    paths = write_dataset(tmp_path)
    replies = {"m<1>": {PRESENCE: EVIL, DIRECTION: "left"},
               "m2": {PRESENCE: "yes", DIRECTION: None}}
    gold = {PRESENCE: ("presence", "yes", YES_NO), DIRECTION: ("horizontal_direction", "left",
                                                               THIRDS)}
    answers, rows, results = {}, {}, []
    chair = ChairScores(chair_i=0.25, chair_s=0.5, hallucinated_objects=["dog"], n_captions=2,
                        ground_truth_source="audit")
    for model, reply in replies.items():
        vrows = [row(cid, gold[cid][0], gold[cid][1], text, "rec", gold[cid][2])
                 for cid, text in reply.items()]
        answers[model] = [answer(model, cid, text) for cid, text in reply.items()]
        rows[model] = vqa_accuracy(vrows).rows
        results.append(result(
            "rec", model, vrows,
            mcq={"total_mcq_questions": 4, "num_infer_failed": 0, "num_parse_failed": 1,
                 "num_correct": 2, "num_incorrect": 1, "pct_correct": 0.5},
            lenient=0.75, judge=judge_scores([{"score": 8}, {"error": "e", "score": None}]),
            vision=vision_scores(2, 0.61, 1), chair=chair))
    judged = {"m2": [{"id": "frame-000000", "score": 6, "reasoning": f"Said {EVIL}",
                      "gt": "A green box.", "pred": "A box.", "model_used": "judge-1"}]}
    cards = build_case_cards(paths["dataset"], answers, rows, paths["detections"],
                             paths["pointclouds"], judged, 4)
    return build_leaderboard(results), results, cards


def test_report_is_self_contained_with_charts_sections_and_cards(tmp_path) -> None:
    leaderboard, results, cards = report_inputs(tmp_path)
    text = render_report(leaderboard, results, cards, "Bench <nightly>")
    tags = tags_of(text)
    images = [attrs["src"] for tag, attrs in tags if tag == "img"]
    assert all(src and src.startswith("data:image/png;base64,") for src in images)
    charts = [a for t, a in tags if t == "img" and a.get("class") == "chart"]
    overlays = [a for t, a in tags if t == "img" and a.get("class") == "overlay"]
    assert len(charts) == 3
    # One overlay per case shown (models share it): presence, direction, the described frame.
    assert len(overlays) == 3
    for attrs in charts + overlays:
        png = base64.b64decode(attrs["src"].split(",", 1)[1])
        assert png.startswith(b"\x89PNG")
    assert not any(t in ("script", "link", "iframe") for t, _ in tags)
    assert not re.search(r'(src|href)="(?!data:|#)', text), "no external resources"
    for anchor in ("headline", "families", "recordings", "pope", "mcq", "judge", "vision",
                   "chair", "cases"):
        assert f'id="{anchor}"' in text
    assert "Bench &lt;nightly&gt;" in text
    assert PRESENCE in text and DIRECTION in text and "frame-000000" in text
    assert "parse failure" in text and "failed call" in text and "timeout" in text
    assert "6/10" in text  # the judge's score on the open-ended card
    assert "detector evidence (audit)" in text  # CHAIR's ground-truth source
    assert "<b>50.0%</b>" in text and "75.0%" in text  # MCQ strict headline, lenient apart
    assert "m&lt;1&gt;" in text


def test_every_string_is_escaped(tmp_path) -> None:
    leaderboard, results, cards = report_inputs(tmp_path)
    text = render_report(leaderboard, results, cards, EVIL)
    assert "<script" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text


def test_report_bytes_are_deterministic_and_written_atomically(tmp_path) -> None:
    first = render_report(*report_inputs(tmp_path / "a"), "Bench")
    second = render_report(*report_inputs(tmp_path / "b"), "Bench")
    assert first == second
    assert "generated" not in first.split("</header>")[0]
    stamped = render_report(*report_inputs(tmp_path / "c"), "Bench",
                            generated_at="2025-01-02 03:04 UTC")
    assert "generated 2025-01-02 03:04 UTC" in stamped
    out = write_report(first, tmp_path / "out" / "report.html")
    assert out.read_text(encoding="utf-8") == first
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


def test_empty_inputs_render_explanations_not_errors() -> None:
    text = render_report(build_leaderboard([]), [], [], "Empty")
    assert "No results." in text and "No case cards." in text


@pytest.mark.parametrize("section", ["pope", "mcq", "judge", "vision", "chair"])
def test_missing_metrics_say_so(section) -> None:
    results = [result("rec", "m", [row("a", "horizontal_direction", "left", "left", "rec",
                                       THIRDS)])]
    text = render_report(build_leaderboard(results), results, [], "t")
    body = text.split(f'id="{section}"', 1)[1].split("</section>", 1)[0]
    assert 'class="empty"' in body
