"""Multi-frame case cards: the frame strip in time order with the evidence drawn, from a small
synthetic spatial dataset written with the real schemas and writers."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.perception.evidence_io import write_detections_table, write_frame_detections
from eval_assets.report.spatial_cards import (
    frame_indices,
    load_spatial_cards,
    spatial_card,
    spatial_cards_section,
)
from eval_assets.schemas.perception import Detection, FrameDetections
from eval_assets.schemas.spatial import SpatialCase, SpatialLabel

W, H = 64, 48
BOX = (8.0, 10.0, 24.0, 30.0)


def _png(path: Path, shade: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((H, W, 3), shade, np.uint8))


def _dataset(root: Path) -> tuple[SpatialCase, SpatialLabel]:
    images = [f"assets/frame-{i:06d}.png" for i in (0, 4, 8)]
    for shade, image in zip((40, 120, 200), images, strict=True):
        _png(root / image, shade)
    case = SpatialCase(id="rd-0", images=images, answer_type="choice",
                       question="Standing at frame 4, is the red ball front-left or ...?",
                       choices=["front-left", "front-right", "back-left", "back-right"])
    label = SpatialLabel(
        id="rd-0", answer="front-left", family="relative_direction", answer_type="choice",
        choices=case.choices, object_names=["red ball"], frame_indices=[0, 4, 8],
        reference_frame=4,
        evidence={"tracks": [{"name": "red ball", "center_world": [1.25, -0.5, 0.3]}]})
    single = SpatialCase(id="sz-0", images=images[:1], answer_type="number", unit="cm",
                         question="How long is the red ball, in cm?")
    single_label = SpatialLabel(
        id="sz-0", answer="31.5", family="object_size_cm", answer_type="number", unit="cm",
        object_names=["red ball"], frame_index=0,
        evidence={"tracks": [{"name": "red ball", "center_world": [1.25, -0.5, 0.3]}]})
    (root / "spatial_cases.jsonl").write_text(
        "".join(c.model_dump_json() + "\n" for c in (case, single)))
    (root / "audit").mkdir()
    (root / "audit" / "spatial_labels.jsonl").write_text(
        "".join(x.model_dump_json() + "\n" for x in (label, single_label)))
    return case, label


def _detections(root: Path) -> Path:
    dets = root / "detections"
    mask = np.zeros((H, W), bool)
    mask[10:30, 8:24] = True
    stored = []
    for index in (0, 8):  # the ball is not detected in frame 4
        stored.append(write_frame_detections(dets, FrameDetections(
            frame_index=index, width=W, height=H, queried_names=["red ball", "chair"],
            detections=[Detection(name=n, label_index=i, box_xyxy=BOX, score=0.9,
                                  mask_area=int(mask.sum()), mask_path=None, detector="color",
                                  detector_version="1", segmenter="box_region",
                                  segmenter_version="1")
                        for i, n in enumerate(["red ball", "chair"])]), [mask, mask]))
    write_detections_table(dets, stored)
    return dets


def _strip_images(html: str) -> list[np.ndarray]:
    out = []
    for data in re.findall(r'src="data:image/jpeg;base64,([^"]+)"', html):
        bgr = cv2.imdecode(np.frombuffer(base64.b64decode(data), np.uint8), cv2.IMREAD_COLOR)
        out.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    return out


def test_the_strip_shows_every_frame_in_order_with_the_named_objects_boxed(
        tmp_path: Path) -> None:
    _dataset(tmp_path / "ds")
    cards = load_spatial_cards(tmp_path / "ds", _detections(tmp_path),
                               {"vlm": {"rd-0": "front-left"}, "down": {"rd-0": None}})
    assert len(cards) == 1  # the single-frame case has no strip card
    html = cards[0]
    assert re.findall(r"<figcaption>(frame \d+)", html) == ["frame 0", "frame 4", "frame 8"]
    assert html.count('class="strip-frame reference"') == 1
    assert re.search(r'class="strip-frame reference".*?frame 4', html)
    assert "(1.25, -0.50, 0.30) m" in html and "Gold: <b>front-left</b>" in html
    assert "failed call" in html and "front-left</li>" in html
    frames = _strip_images(html)
    assert len(frames) == 3
    # A box outline is drawn where the ball was detected (frames 0 and 8), none in frame 4;
    # the chair (not named by the label) is not drawn, so frame 4 stays its plain grey.
    plain = [np.abs(f.astype(int) - int(np.median(f))).max() for f in frames]
    assert plain[0] > 60 and plain[2] > 60 and plain[1] < 10


def test_card_parts_and_errors() -> None:
    case = SpatialCase(id="a", images=["assets/x.png", "assets/y.png"], answer_type="number",
                       question="How many chairs?")
    label = SpatialLabel(id="a", answer="2", family="object_count_across_frames",
                         answer_type="number", object_names=["chair"], frame_index=3,
                         evidence={"tracks": [{"name": "chair", "center_world": [0, 0, 0]}]})
    assert frame_indices(case, label) == [None, None]  # two images, one frame index: unknown
    html = spatial_card(case, label, {})
    assert html.count("image missing") == 2 and "x.png" in html
    with pytest.raises(ValueError, match="not the same case"):
        spatial_card(case, label.model_copy(update={"id": "b"}), {})
    assert spatial_cards_section([]) == ""
    assert 'id="spatial-cards"' in spatial_cards_section([html])


def test_a_dataset_without_spatial_cases_has_no_cards(tmp_path: Path) -> None:
    assert load_spatial_cards(tmp_path) == []


def test_with_files_the_strip_links_content_named_files_instead_of_inlining(
        tmp_path: Path) -> None:
    """The report's mode: each strip image goes into ``files`` and the card links it lazily, so
    the page does not grow by the images' bytes; the images are the ones the inline mode embeds."""
    _dataset(tmp_path / "ds")
    inline = load_spatial_cards(tmp_path / "ds", _detections(tmp_path))[0]
    files: dict[str, bytes] = {}
    linked = load_spatial_cards(tmp_path / "ds", _detections(tmp_path), files=files)[0]
    assert "data:image" not in linked
    srcs = re.findall(r'<img alt="[^"]*" loading="lazy" src="([^"]+)"', linked)
    assert len(srcs) == 3 and set(srcs) == set(files)
    assert all(re.fullmatch(r"report_frames/[0-9a-f]{32}\.jpg", s) for s in srcs)
    embedded = [base64.b64decode(d) for d in
                re.findall(r'src="data:image/jpeg;base64,([^"]+)"', inline)]
    assert [files[s] for s in srcs] == embedded
    assert len(linked) < len(inline) - sum(len(b) for b in embedded)
