"""Detection precision, recall, naming and mask IoU against hand-built id maps, exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eval_assets.evidence_quality.detection import FrameDetectionMasks, detection_quality
from eval_assets.evidence_quality.truth import TruthFormatError, load_truth
from eval_assets_tests.evidence_quality.helpers import HEIGHT, WIDTH, blank, obj, write_truth

OBJECTS = [obj(0, "red ball"), obj(1, "blue box"), obj(2, "red ball")]


def _truth_map() -> np.ndarray:
    m = blank()
    m[0:6, 0:10] = 0     # red ball, 60 px
    m[10:16, 20:30] = 1  # blue box, 60 px
    m[10:20, 0:10] = 2   # a second red ball, 100 px, never detected
    return m


def _mask(rows: slice, cols: slice) -> np.ndarray:
    mask = np.zeros((HEIGHT, WIDTH), dtype=bool)
    mask[rows, cols] = True
    return mask


def test_precision_recall_naming_and_iou_are_exact(tmp_path: Path) -> None:
    truth = write_truth(tmp_path / "r.db", OBJECTS, [_truth_map()])
    dets = FrameDetectionMasks(
        frame_index=0, queried=frozenset({"red ball", "blue box", "red box"}),
        names=["red ball", "red box", "red ball"],
        masks=[_mask(slice(0, 6), slice(0, 11)),     # the red ball + 6 px: IoU 60/66
               _mask(slice(10, 16), slice(20, 30)),  # the blue box, named "red box"
               _mask(slice(0, 4), slice(30, 40))])   # nothing there: a false positive
    q = detection_quality([(dets, truth.frame(0))], {i: o["name"] for i, o in
                                                     enumerate(OBJECTS)}, frames_not_checked={})
    assert (q.detections, q.matched, q.correctly_named) == (3, 2, 1)
    assert q.naming_accuracy == 0.5
    assert q.mean_mask_iou == pytest.approx((60 / 66 + 1.0) / 2)
    assert q.precision == pytest.approx(1 / 3)
    assert q.recall == pytest.approx(1 / 3)  # red ball 1 of 2, blue box 0 of 1
    assert q.confusions == {"red box -> blue box": 1}
    by = {n.name: n for n in q.per_name}
    assert (by["red ball"].precision, by["red ball"].recall) == (0.5, 0.5)
    assert by["red ball"].mean_iou == pytest.approx(60 / 66)
    assert (by["blue box"].precision, by["blue box"].recall) == (None, 0.0)
    assert (by["red box"].precision, by["red box"].recall) == (0.0, None)


def test_two_detections_of_one_object_match_it_once(tmp_path: Path) -> None:
    truth = write_truth(tmp_path / "r.db", OBJECTS, [_truth_map()])
    dets = FrameDetectionMasks(
        frame_index=0, queried=frozenset({"red ball"}), names=["red ball", "red ball"],
        masks=[_mask(slice(0, 6), slice(0, 11)), _mask(slice(0, 6), slice(0, 10))])
    q = detection_quality([(dets, truth.frame(0))], {0: "red ball", 1: "blue box",
                                                     2: "red ball"}, frames_not_checked={})
    # The exact mask (IoU 1) wins; the other is a duplicate, hence a false positive.
    assert (q.matched, q.precision, q.mean_mask_iou) == (1, 0.5, 1.0)


def test_below_the_iou_threshold_is_no_match(tmp_path: Path) -> None:
    truth = write_truth(tmp_path / "r.db", OBJECTS, [_truth_map()])
    half = _mask(slice(0, 3), slice(0, 10))  # 30 of the ball's 60 px: IoU 0.5, matched
    less = _mask(slice(0, 2), slice(0, 10))  # 20 of 60: IoU 1/3, not matched
    for mask, matched in ((half, 1), (less, 0)):
        dets = FrameDetectionMasks(0, frozenset({"red ball"}), ["red ball"], [mask])
        q = detection_quality([(dets, truth.frame(0))], {0: "red ball", 1: "blue box",
                                                         2: "red ball"}, frames_not_checked={})
        assert q.matched == matched


def test_truth_files_are_read_by_format_and_errors_name_the_field(tmp_path: Path) -> None:
    assert load_truth(tmp_path / "none.db") is None  # no sidecars: no truth, no error
    truth = write_truth(tmp_path / "r.db", OBJECTS, [_truth_map(), blank()],
                        frame_index=[4, 9])
    assert truth.frame_indices == [4, 9] and not truth.has_frame(0)
    frame = truth.frame(4)
    assert frame.pixels == {0: 60, 1: 60, 2: 100}
    assert frame.bbox[1] == (20, 10, 30, 16)  # exclusive right/bottom
    np.savez(tmp_path / "r.truth.npz", id_maps=np.zeros((1, 3, 3), dtype=np.uint8))
    with pytest.raises(TruthFormatError, match=r"r\.truth\.npz: 'id_maps' is uint8 \(1, 3, 3\)"):
        load_truth(tmp_path / "r.db")
