"""MCQ accuracy: AVLM's strict letter rule and document, the lenient tier, input errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval_assets.metrics.avlm_rows import (
    PredictionsError,
    ScoringWarning,
    read_predictions,
    rows_from_dicts,
)
from eval_assets.metrics.mcq import (
    Tier,
    extract_answer_lenient,
    parse_choices,
    parse_mcq_answer,
    score_mcq,
    score_mcq_dir,
    score_mcq_lenient,
)


def mcq_row(index: int, cls: str, gt: str, pred: str | None, status: str = "success",
            **extra: Any) -> dict[str, Any]:
    """An AVLM predictions.jsonl row for an MCQ case."""
    return {"index": index, "id": f"case-{index}", "class": cls, "evaluation_type": "mcq",
            "ground_truth": gt, "prediction": pred, "inference_status": status,
            "conversations": [{"from": "human", "value": "<image> Question?"},
                              {"from": "gpt", "value": gt}], "metadata": None, **extra}


# Hand-graded (strict / lenient) in the comments; the expected documents below follow from them.
FIXTURE: list[dict[str, Any]] = [
    mcq_row(0, "counting", "(A) two", "(A)"),                       # correct / correct strict
    mcq_row(1, "counting", "(B) three", "**(c)** three"),           # incorrect / incorrect strict
    mcq_row(2, "counting", "(C) one", "C"),                         # parse / correct bare_letter
    mcq_row(3, "presence", "(A) yes", None, status="error: OOM"),   # infer failed / infer failed
    mcq_row(4, "presence", "yes", "(A) yes"),                       # gt has no letter: nowhere
    {"index": 5, "id": "case-5", "class": "describe", "evaluation_type": "open_ended",
     "ground_truth": "A person.", "prediction": "(A)", "inference_status": "success"},
    mcq_row(6, "presence", "(a) yes", " (A) yes"),                  # correct / correct strict
    mcq_row(7, "presence", "(B) no", "Answer: (B)"),                # parse / correct answer_line
    mcq_row(8, "counting", "(D) four", "(D)."),                     # parse / correct bare_letter
    mcq_row(9, "distance", "(A) 1-2 m", "1-2 m.", choices=["1-2 m", "2-3 m"]),  # parse / choice
    {"index": 10, "id": "case-10", "class": "counting", "ground_truth": "(A) x",
     "prediction": "(A)", "inference_status": "success"},           # no evaluation_type: skipped
]

EXPECTED_STRICT = {
    "total_mcq_questions": 8,
    "num_infer_failed": 1,
    "num_parse_failed": 4,
    "num_correct": 2,
    "num_incorrect": 1,
    "pct_correct": 0.25,
    "per_class": {
        "counting": {"total_mcq_questions": 4, "num_infer_failed": 0, "num_parse_failed": 2,
                     "num_correct": 1, "num_incorrect": 1, "pct_correct": 0.25},
        "presence": {"total_mcq_questions": 3, "num_infer_failed": 1, "num_parse_failed": 1,
                     "num_correct": 1, "num_incorrect": 0, "pct_correct": 1 / 3},
        "distance": {"total_mcq_questions": 1, "num_infer_failed": 0, "num_parse_failed": 1,
                     "num_correct": 0, "num_incorrect": 0, "pct_correct": 0.0},
    },
}


@pytest.mark.parametrize(("text", "letter"), [
    ("(A)", "a"),
    ("**(b)**", "b"),
    (" (C) text", "c"),
    ("\t\n(d)\nbecause", "d"),
    ("**(E)** the van", "e"),
    ("**(F)", "f"),
    ("(Z)", "z"),
])
def test_strict_regex_accepts(text: str, letter: str) -> None:
    assert parse_mcq_answer(text) == letter


@pytest.mark.parametrize("text", [
    "(D).",          # "." is not whitespace
    "**(A)**.",
    "(A)text",
    "A",
    "a) yes",
    "Answer: (A)",
    "The answer is (B)",
    "(AB)",
    "((A))",
    "(1)",
    "* (A)",
    "",
])
def test_strict_regex_rejects(text: str) -> None:
    assert parse_mcq_answer(text) is None


def test_strict_document_matches_hand_computed_values() -> None:
    rows = rows_from_dicts(FIXTURE)
    with pytest.warns(ScoringWarning) as caught:
        result = score_mcq(rows)
    messages = [str(w.message) for w in caught]
    assert any("'yes' has no '(X)' letter" in m and "index=4" in m for m in messages)
    assert any("missing evaluation_type" in m and "case-10" in m for m in messages)

    assert list(result) == ["total_mcq_questions", "num_infer_failed", "num_parse_failed",
                            "num_correct", "num_incorrect", "pct_correct", "per_class"]
    assert list(result["per_class"]) == ["counting", "presence", "distance"]  # first seen
    for key, value in EXPECTED_STRICT.items():
        if key != "per_class":
            assert result[key] == value, key
    for cls, expected in EXPECTED_STRICT["per_class"].items():  # type: ignore[union-attr]
        assert list(result["per_class"][cls]) == list(expected)
        for key, value in expected.items():
            assert result["per_class"][cls][key] == value, (cls, key)
    assert result["per_class"]["presence"]["pct_correct"] == 0.3333333333333333


def test_class_of_an_uncounted_row_is_still_listed_first_seen() -> None:
    # AVLM creates the class entry before checking the ground truth, so a class seen only on
    # rows without a ground-truth letter appears with zero counts, in first-seen position.
    rows = rows_from_dicts([mcq_row(0, "odd", "no letter", "(A)"),
                            mcq_row(1, "even", "(A) x", "(A)")])
    with pytest.warns(ScoringWarning):
        result = score_mcq(rows)
    assert list(result["per_class"]) == ["odd", "even"]
    assert result["per_class"]["odd"] == {
        "total_mcq_questions": 0, "num_infer_failed": 0, "num_parse_failed": 0,
        "num_correct": 0, "num_incorrect": 0, "pct_correct": 0.0}
    assert result["total_mcq_questions"] == 1 and result["pct_correct"] == 1.0


def test_empty_input_gives_zero_fraction() -> None:
    result = score_mcq(rows_from_dicts([FIXTURE[5]]))  # only an open-ended row
    assert result == {"total_mcq_questions": 0, "num_infer_failed": 0, "num_parse_failed": 0,
                      "num_correct": 0, "num_incorrect": 0, "pct_correct": 0.0, "per_class": {}}


def test_lenient_tier_records_every_row() -> None:
    rows = rows_from_dicts(FIXTURE)
    with pytest.warns(ScoringWarning):
        strict = score_mcq(rows)
    with pytest.warns(ScoringWarning):
        lenient = score_mcq_lenient(rows)
    assert lenient["total_mcq_questions"] == strict["total_mcq_questions"] == 8
    assert (lenient["num_correct"], lenient["num_incorrect"], lenient["num_parse_failed"],
            lenient["num_infer_failed"]) == (6, 1, 0, 1)
    assert lenient["pct_correct"] == 0.75
    assert lenient["tier_counts"] == {"strict": 3, "answer_line": 1, "bare_letter": 2,
                                      "choice_text": 1}
    assert [(r["index"], r["outcome"], r["tier"], r["pred_letter"]) for r in lenient["rows"]] == [
        (0, "correct", "strict", "a"),
        (1, "incorrect", "strict", "c"),
        (2, "correct", "bare_letter", "c"),
        (3, "infer_failed", None, None),
        (4, "gt_without_letter", None, None),
        (6, "correct", "strict", "a"),
        (7, "correct", "answer_line", "b"),
        (8, "correct", "bare_letter", "d"),
        (9, "correct", "choice_text", "a"),
    ]
    assert lenient["per_class"]["counting"]["pct_correct"] == 0.75
    assert lenient["per_class"]["presence"]["num_correct"] == 2
    assert lenient["per_class"]["distance"]["tier_counts"]["choice_text"] == 1


@pytest.mark.parametrize(("text", "choices", "letter", "tier"), [
    ("(B) two", None, "b", Tier.STRICT),
    ("Answer: (C)", None, "c", Tier.ANSWER_LINE),
    ("The answer is B.", None, "b", Tier.ANSWER_LINE),
    ("Looking at the frame, two people stand.\nFinal answer: **C**", None, "c", Tier.ANSWER_LINE),
    ("c.", None, "c", Tier.BARE_LETTER),
    ("**D**", None, "d", Tier.BARE_LETTER),
    ("Two People.", ["one person", "two people"], "b", Tier.CHOICE_TEXT),
    ("Answer: a dog", None, None, None),       # a word, not a letter
    ("E", ["x", "y", "z"], None, None),        # no such choice
    ("three people", ["one", "two"], None, None),
    ("", None, None, None),
    (None, None, None, None),
])
def test_lenient_extraction(text: str | None, choices: list[str] | None, letter: str | None,
                            tier: Tier | None) -> None:
    assert extract_answer_lenient(text, choices) == (letter, tier)


def test_choices_are_read_from_the_question() -> None:
    assert parse_choices("How many people? (A) one (B) two (C) three or more") == [
        "one", "two", "three or more"]
    assert parse_choices("Pick one:\n(A) left of the door\n(B) right of it\nAnswer with (X).") \
        == ["left of the door", "right of it"]
    assert parse_choices("No lettered options here (really).") is None
    row = rows_from_dicts([mcq_row(0, "c", "(B) two", "two", conversations=[
        {"role": "user", "content": [{"type": "image"},
                                     {"type": "text", "text": "Count. (A) one (B) two"}]}])])
    assert score_mcq_lenient(row)["rows"][0]["tier"] == "choice_text"


def test_inference_dir_outputs_are_deterministic_and_atomic(tmp_path: Path) -> None:
    (tmp_path / "predictions.jsonl").write_text(
        "\n".join(json.dumps(r) for r in FIXTURE) + "\n\n", encoding="utf-8")
    with pytest.warns(ScoringWarning):
        report = score_mcq_dir(tmp_path)
    strict_bytes = report.strict_path.read_bytes()
    lenient_bytes = report.lenient_path.read_bytes()
    assert report.strict_path == tmp_path / "mcq" / "mcq_results.json"
    assert report.lenient_path == tmp_path / "mcq" / "mcq_lenient_results.json"
    # AVLM's write_json: indent 2, non-ASCII kept, no final newline.
    assert strict_bytes.decode() == json.dumps(EXPECTED_STRICT, ensure_ascii=False, indent=2)
    with pytest.warns(ScoringWarning):
        score_mcq_dir(tmp_path)
    assert report.strict_path.read_bytes() == strict_bytes
    assert report.lenient_path.read_bytes() == lenient_bytes
    assert sorted(p.name for p in (tmp_path / "mcq").iterdir()) == [
        "mcq_lenient_results.json", "mcq_results.json"]  # no temporary files left


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "predictions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_errors_name_file_line_and_field(tmp_path: Path) -> None:
    good = json.dumps(mcq_row(0, "c", "(A) x", "(A)"))
    path = _write(tmp_path, [good, "{not json"])
    with pytest.raises(PredictionsError, match=r"predictions\.jsonl:2: not valid JSON"):
        read_predictions(path)

    path = _write(tmp_path, [good, good, json.dumps({**mcq_row(2, "c", "(A) x", "(A)"),
                                                     "ground_truth": 3})])
    with pytest.raises(PredictionsError, match=r":3: field 'ground_truth'.*fix: write"):
        read_predictions(path)

    no_class = mcq_row(1, "c", "(A) x", "(A)")
    del no_class["class"]
    rows = read_predictions(_write(tmp_path, [good, json.dumps(no_class)]))
    with pytest.raises(PredictionsError, match=r"predictions\.jsonl:2: field 'class' is missing"):
        score_mcq(rows)

    with pytest.raises(PredictionsError, match=r":1: a JSON list where a row object"):
        read_predictions(_write(tmp_path, ["[1, 2]"]))

    with pytest.raises(FileNotFoundError, match="predictions file not found"):
        read_predictions(tmp_path / "missing" / "predictions.jsonl")
