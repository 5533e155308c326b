"""Case cards and per-frame overlays from a real dataset folder, real stage folders and real
answer records."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.perception.evidence_io import mask_relpath
from eval_assets.report.cards import build_case_cards, build_frame_images, decode_rle
from eval_assets.report.overlays import depth_colours
from eval_assets.vqa.dataset import mask_rle
from eval_assets_tests.report.builders import (
    THIRDS,
    YES_NO,
    answer,
    box_mask,
    frame_image,
    write_dataset,
)

PRESENCE = "frame-000000-green-box-presence"
DIRECTION = "frame-000000-green-box-horizontal_direction"
ABSENT = "frame-000000-red-ball-presence"


def scored(model: str, replies: dict[str, str | None]):
    """The model's answer records and its rows scored by the real vqa_accuracy."""
    meta = {PRESENCE: ("presence", "yes", YES_NO), DIRECTION: ("horizontal_direction", "left",
                                                               THIRDS),
            ABSENT: ("presence", "no", YES_NO)}
    rows = [{"case_id": cid, "family": meta[cid][0], "recording": "rec", "frame_index": 0,
             "choices": meta[cid][2], "answer": meta[cid][1], "prediction": text}
            for cid, text in replies.items()]
    return [answer(model, cid, text) for cid, text in replies.items()], vqa_accuracy(rows).rows


def decode(data: bytes) -> np.ndarray:
    return cv2.cvtColor(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR),
                        cv2.COLOR_BGR2RGB)


def close(a: np.ndarray, b, tol: int = 40) -> bool:
    """JPEG is lossy: colours are compared with a tolerance per channel."""
    return bool(np.all(np.abs(np.asarray(a, int) - np.asarray(b, int)) <= tol))


@pytest.fixture
def inputs(tmp_path):
    paths = write_dataset(tmp_path)
    good_answers, good_rows = scored("good", {PRESENCE: "Yes.", DIRECTION: "left",
                                              ABSENT: "no"})
    bad_answers, bad_rows = scored("bad", {PRESENCE: "<script>x</script>", DIRECTION: None,
                                           ABSENT: "no"})
    return paths, {"good": good_answers, "bad": bad_answers}, {"good": good_rows,
                                                              "bad": bad_rows}


def test_cards_show_each_models_answer_with_gold_and_evidence(inputs) -> None:
    paths, answers, rows = inputs
    cards = build_case_cards(paths["dataset"], answers, rows, None, 2)
    # Two cases for every model: failures first, one per family before a second of any family.
    assert [(c.case_id, c.model) for c in cards] == [
        (PRESENCE, "bad"), (PRESENCE, "good"), (DIRECTION, "bad"), (DIRECTION, "good")]
    by = {(c.case_id, c.model): c for c in cards}
    assert by[(PRESENCE, "bad")].status == "parse_failure"
    assert by[(PRESENCE, "bad")].raw_response == "<script>x</script>"
    assert by[(PRESENCE, "good")].status == "correct"
    assert by[(PRESENCE, "good")].predicted_choice == "yes"
    assert by[(PRESENCE, "good")].tier == "exact"
    assert by[(PRESENCE, "good")].latency_s == 0.5
    assert by[(DIRECTION, "bad")].status == "failed_call"
    assert by[(DIRECTION, "bad")].error == "timeout: no response within 60 s"
    card = by[(DIRECTION, "good")]
    assert (card.recording, card.gold, card.choices, card.family) == (
        "rec", "left", THIRDS, "horizontal_direction")
    assert card.evidence == {"centre_x": 16.0, "width": 64}
    assert card.object_names == ["green box"] and card.frame_index == 0


def test_every_case_is_carded_by_default_in_dataset_order(inputs) -> None:
    paths, answers, rows = inputs
    cards = build_case_cards(paths["dataset"], answers, rows)
    assert [(c.case_id, c.model) for c in cards] == [
        (PRESENCE, "bad"), (PRESENCE, "good"), (DIRECTION, "bad"), (DIRECTION, "good"),
        (ABSENT, "bad"), (ABSENT, "good")]


def test_one_overlay_per_frame_with_outlined_masks_and_points(inputs) -> None:
    paths, _, _ = inputs
    frames = build_frame_images(paths["dataset"], [0, 0], paths["detections"],
                                paths["pointclouds"], recording="rec")
    assert [(f.recording, f.frame_index, f.key) for f in frames] == [("rec", 0, "rec#0")]
    frame = frames[0]
    assert frame.overlay_jpeg[:2] == frame.plain_jpeg[:2] == b"\xff\xd8"  # JPEG
    assert "3 LiDAR points" in frame.note and "1 box(es) [green box]" in frame.note
    overlay, plain, raw = decode(frame.overlay_jpeg), decode(frame.plain_jpeg), frame_image()
    assert overlay.shape == raw.shape == plain.shape == (frame.height, frame.width, 3)
    # The plain frame is the frame as the model saw it, up to JPEG's loss at sharp edges.
    assert np.abs(plain.astype(int) - raw.astype(int)).mean() < 3
    # The box edge is drawn (its exact colour is checked losslessly in test_overlays; 4:2:0
    # JPEG smears a 1-pixel line's chroma); the object's inside keeps its colour (no tint).
    assert not close(overlay[20, 8], raw[20, 8])
    assert close(overlay[20, 16], raw[20, 16])
    # The LiDAR point at (32, 24), 2 m away: drawn, brighter than the grey wall, in the turbo
    # map's green (channel order checked loosely, chroma is smeared as above).
    point = overlay[24, 32].astype(int)
    assert not close(point, raw[24, 32]) and point[1] == point.max()
    assert depth_colours(np.array([2.0]))[0][1] == 252
    assert close(overlay[45, 60], raw[45, 60], 20)  # far from everything: JPEG noise only


def test_an_overlay_without_stage_folders_draws_only_the_audit(tmp_path) -> None:
    paths = write_dataset(tmp_path)
    (frame,) = build_frame_images(paths["dataset"], [0], None, None, recording="rec")
    assert "no point-cloud folder" in frame.note
    overlay = decode(frame.overlay_jpeg)
    assert close(overlay[24, 32], frame_image()[24, 32], 12)  # no LiDAR point drawn


def test_judge_results_attach_to_cases_and_frames(inputs) -> None:
    paths, answers, rows = inputs
    judged = {
        "good": [{"id": "frame-000000", "score": 7, "reasoning": "Names the green box.",
                  "gt": "A green box on grey.", "pred": "A green box.", "model_used": "j",
                  "conversation": [{"from": "human", "value": "<image>\nDescribe the frame."}]},
                 {"id": PRESENCE, "score": 9, "reasoning": "Right.", "model_used": "j"}],
        "bad": [{"id": "frame-000000", "score": None, "error": "no JSON",
                 "error_category": "parse_error", "gt": "A green box on grey.", "pred": ""}],
    }
    cards = build_case_cards(paths["dataset"], answers, rows, judged, 4)
    good_presence = next(c for c in cards if c.case_id == PRESENCE and c.model == "good")
    assert good_presence.judge is not None and good_presence.judge.score == 9
    open_cards = [c for c in cards if c.kind == "open_ended"]
    assert [(c.model, c.status) for c in open_cards] == [("bad", "judge_failed"),
                                                         ("good", "judged")]
    good = open_cards[1]
    assert (good.question, good.gold, good.raw_response) == (
        "Describe the frame.", "A green box on grey.", "A green box.")
    assert good.judge is not None and good.judge.reasoning == "Names the green box."
    assert open_cards[0].judge is not None and open_cards[0].judge.error_category == "parse_error"


def test_masks_come_from_the_detections_folder_when_the_audit_has_no_rle(tmp_path) -> None:
    paths = write_dataset(tmp_path, rle=False, mask_source=mask_relpath(0, 0))
    (frame,) = build_frame_images(paths["dataset"], [0], paths["detections"], None,
                                  recording="rec")
    overlay = decode(frame.overlay_jpeg)
    # The mask's outline runs along its edge (column 10, inside the box); its inside is untouched.
    assert not close(overlay[20, 10], frame_image()[20, 10], 12)
    # A tint (the old drawing) moved this pixel by ~76 in red; JPEG chroma bleed stays under 40.
    assert close(overlay[20, 16], frame_image()[20, 16])


def test_rle_round_trip_and_bad_inputs(inputs, tmp_path) -> None:
    mask = box_mask()
    assert np.array_equal(decode_rle(mask_rle(mask)), mask)
    with pytest.raises(ValueError, match="regenerate the dataset"):
        decode_rle({"size": [2, 2], "counts": [1, 1]})
    paths, answers, rows = inputs
    stray = {"good": [r.model_copy(update={"case_id": "frame-000009-x-presence"})
                      for r in rows["good"]]}
    with pytest.raises(ValueError, match="does not contain"):
        build_case_cards(paths["dataset"], answers, stray)
    with pytest.raises(ValueError, match="limit_per_model"):
        build_case_cards(paths["dataset"], answers, rows, None, -1)
    (paths["dataset"] / "assets" / "frame-000000.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"frame-000000\.png"):
        build_frame_images(paths["dataset"], [0], None, None, recording="rec")
