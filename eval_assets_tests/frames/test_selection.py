"""Frame selection: dimOS's options and rules, the selection file, the default policy, scoring."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.frames import (
    FrameSelectionConfig,
    FrameSelectionError,
    load_selection_config,
    plan_selection,
    prepare_rectified_frames,
    read_rectified_frames,
    read_selection_record,
)
from eval_assets.frames.selection import (
    DEFAULT_EVERY_FRAME_MAX_IMAGES,
    FrameQuality,
    compact_indices,
    measure_quality,
    quality_window_choices,
    resolve_selection,
    selection_digest,
    selection_from,
    sharpness_score,
    throttle_indices,
)
from eval_assets.layout import selection_file_for
from eval_assets.recording import Recording, jpeg_image
from eval_assets.recording.messages import Header
from eval_assets_tests.factories import make_recording

# --- the config and its file -----------------------------------------------------------------


@pytest.mark.parametrize(("values", "message"), [
    ({"image_index": 1, "start": 2}, "image_index cannot be combined with start"),
    ({"image_index": 1, "quality_window": 2}, "not both"),
    ({"stride": 2, "quality_window": 2}, "stride and quality_window cannot be combined"),
    ({"time_step": 1, "stride": 2}, "cannot be combined: choose one of stride, time_step"),
    ({"min_brightness": 0.2}, "min_brightness requires quality_window"),
    ({"start": 5, "stop": 5}, r"stop \(5\) must be greater than start \(5\)"),
])
def test_rules_follow_dimos(values: dict, message: str) -> None:
    with pytest.raises(FrameSelectionError, match=message):
        selection_from(values, source="opts")


def test_the_file_loader_names_file_field_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "hall.selection.yaml"
    assert load_selection_config(path) == FrameSelectionConfig()  # no file: the defaults
    path.write_text("")
    assert load_selection_config(path).is_default
    path.write_text("# five-second windows\nquality_window: 5\nmin_brightness: 0.1\n"
                    "max_bad_fraction: 0.3\n")
    config = load_selection_config(path)
    assert (config.quality_window, config.min_brightness, config.max_bad_fraction) == (5, 0.1, 0.3)
    assert not config.is_default
    for text, expected in [
        ("stride: 0\n", rf"{path}: field 'stride': .*greater than or equal to 1; fix: correct "
                        r"or remove 'stride'"),
        ("strde: 2\n", rf"{path}: unknown field 'strde'; fix: use only image_index, start"),
        ("- 1\n- 2\n", rf"{path}: expected a mapping of selection fields, got list; fix:"),
        ("stride: [\n", rf"{path}: not valid YAML .* at line 2, column 1\); fix: correct"),
        ("max_bad_fraction: 2\n", r"field 'max_bad_fraction': .*less than or equal to 1"),
        ("stride: 2\nquality_window: 3\n", rf"{path}: stride and quality_window cannot"),
    ]:
        path.write_text(text)
        with pytest.raises(FrameSelectionError, match=expected):
            load_selection_config(path)


def test_the_file_sits_beside_the_recording_and_has_a_content_hash(tmp_path: Path) -> None:
    db = tmp_path / "hallway.db"
    assert selection_file_for(db) == tmp_path / "hallway.selection.yaml"
    assert selection_digest(selection_file_for(db)) is None
    selection_file_for(db).write_text("stride: 2\n")
    first = selection_digest(selection_file_for(db))
    selection_file_for(db).write_text("stride: 3\n")
    assert first and selection_digest(selection_file_for(db)) not in (None, first)


# --- resolving against a recording -----------------------------------------------------------


def test_default_policy_every_frame_for_short_quality_window_for_long() -> None:
    short = resolve_selection(FrameSelectionConfig(), 24)
    assert (short.mode, short.start, short.stop, short.stride) == ("every_frame", 0, 24, 1)
    edge = resolve_selection(FrameSelectionConfig(), DEFAULT_EVERY_FRAME_MAX_IMAGES)
    assert edge.mode == "every_frame"
    long = resolve_selection(FrameSelectionConfig(max_bad_fraction=0.5), 27_000)
    assert (long.mode, long.quality_window, long.min_brightness) == ("quality_window", 5.0, 0.05)
    assert "default policy: 27000 images > 300" in long.why


def test_ranges_and_indices_are_checked_against_the_recording() -> None:
    assert resolve_selection(FrameSelectionConfig(start=20), 24).stop == 24
    stride = resolve_selection(FrameSelectionConfig(start=2, stop=9, stride=3), 24)
    assert (stride.mode, stride.start, stride.stop, stride.stride) == ("stride", 2, 9, 3)
    with pytest.raises(FrameSelectionError, match=r"sel.yaml: image_index 24 is outside the 24 "
                                                  r"images .*choose an index from 0 to 23"):
        resolve_selection(FrameSelectionConfig(image_index=24), 24, "sel.yaml")
    with pytest.raises(FrameSelectionError, match=r"stop 30 is outside the 24 images"):
        resolve_selection(FrameSelectionConfig(stop=30), 24)
    with pytest.raises(FrameSelectionError, match=r"start 24 is outside the 24 images"):
        resolve_selection(FrameSelectionConfig(start=24), 24)


# --- the pure rules --------------------------------------------------------------------------


def test_time_step_keeps_one_frame_per_step_like_dimos_throttle() -> None:
    ts = np.array([0.0, 0.4, 0.9, 1.0, 1.5, 2.05, 2.1, 3.2])
    assert throttle_indices(ts, range(8), 1.0) == [0, 3, 5, 7]
    assert throttle_indices(ts, range(1, 8), 1.0) == [1, 4, 7]
    assert throttle_indices(ts, range(8), 0.01) == list(range(8))


def test_quality_window_keeps_the_sharpest_per_window_like_dimos() -> None:
    ts = np.array([0.0, 0.5, 1.0, 1.9, 2.0, 2.5, 4.1, 4.2])
    sharp = [0.1, 0.5, 0.5, 0.2, 0.3, 0.9, 0.4, 0.4]
    bright = [0.5, 0.5, 0.5, 0.5, 0.01, 0.5, 0.5, 0.5]
    quality = {i: FrameQuality(s, b) for i, (s, b) in enumerate(zip(sharp, bright, strict=True))}
    # Windows open at a candidate and close at the first one >= 2 s later; ties keep the earlier.
    choices = quality_window_choices(ts, range(8), quality, 2.0, None)
    assert [(c.frame_index, c.window_start_ts, c.candidates) for c in choices] == [
        (1, 0.0, 4), (5, 2.0, 2), (6, 4.1, 2)]
    # The floor (strictly brighter) removes frame 4 before windowing: frame 5 opens window 2.
    floored = quality_window_choices(ts, range(8), quality, 2.0, 0.01)
    assert [(c.frame_index, c.window_start_ts) for c in floored] == [(1, 0.0), (5, 2.5)]
    # Frames without a score (bad or skipped) are no candidates.
    del quality[1]
    assert quality_window_choices(ts, range(4), quality, 2.0, None)[0].frame_index == 2
    assert quality_window_choices(ts, range(8), {}, 2.0, None) == []


def test_compact_indices() -> None:
    assert compact_indices([7, 0, 1, 2, 3, 9, 10, 11]) == "0-3, 7, 9-11"
    assert compact_indices(list(range(0, 100, 2)), limit=3) == "0, 2, 4, ... (47 more runs)"


# --- scores (dimOS Image.sharpness / brightness) --------------------------------------------


def _jpeg(rgb: np.ndarray) -> object:
    return jpeg_image(rgb, Header.at(0.0, "cam"), 95)


def test_quality_scores_from_a_reduced_decode() -> None:
    rng = np.random.default_rng(0)
    sharp = (rng.random((720, 1280, 3)) * 255).astype(np.uint8)
    blurred = cv2.GaussianBlur(sharp, (0, 0), 6)
    dark = (sharp // 20).astype(np.uint8)
    q_sharp, q_blur, q_dark = (measure_quality(_jpeg(im)) for im in (sharp, blurred, dark))
    assert q_sharp.sharpness > q_blur.sharpness + 0.2
    assert q_sharp.brightness == pytest.approx(sharp.mean() / 255, abs=0.01)
    assert q_dark.brightness < 0.05 < q_blur.brightness
    flat = np.full((48, 64, 3), 128, np.uint8)  # below 160 px: full-size decode
    assert measure_quality(_jpeg(flat)) == FrameQuality(0.0, pytest.approx(128 / 255, abs=0.01))
    gray = cv2.cvtColor(sharp, cv2.COLOR_RGB2GRAY)
    assert sharpness_score(gray) == pytest.approx(q_sharp.sharpness, abs=0.05)


def test_an_undecodable_image_is_a_value_error() -> None:
    image = _jpeg(np.zeros((48, 64, 3), np.uint8))
    broken = type(image)(image.header, image.height, image.width, "jpeg", 0, 0, b"\xff\xd8junk")
    with pytest.raises(ValueError, match=r"is not a decodable JPEG"):
        measure_quality(broken)


# --- plans and the stage on a real recording ---------------------------------------------------


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve 320x240 frames 0.25 s apart."""
    return make_recording(tmp_path_factory.mktemp("sel") / "sel.db", n_frames=12, width=320,
                          height=240, dt=0.25)


@pytest.mark.parametrize(("config", "mode", "selected"), [
    (FrameSelectionConfig(), "every_frame", list(range(12))),
    (FrameSelectionConfig(image_index=4), "image_index", [4]),
    (FrameSelectionConfig(start=1, stop=10, stride=4), "stride", [1, 5, 9]),
    (FrameSelectionConfig(time_step=1.0), "time_step", [0, 4, 8]),
])
def test_plans_choose_from_timestamps(db: Path, config: FrameSelectionConfig, mode: str,
                                      selected: list[int]) -> None:
    with Recording.open(db) as rec:
        plan = plan_selection(rec, config)
    assert (plan.record.mode, plan.record.selected, plan.to_prepare) == (mode, selected, selected)
    assert plan.record.examined == len(selected) and plan.skipped == ()
    assert plan.record.image_count == 12 and plan.record.config == config


def test_quality_window_plan_scores_every_candidate(db: Path) -> None:
    config = FrameSelectionConfig(start=2, stop=12, quality_window=1.0)
    with Recording.open(db) as rec:
        plan = plan_selection(rec, config, config_file=Path("sel.selection.yaml"))
    record = plan.record
    assert record.examined == 10 and record.config_file == "sel.selection.yaml"
    assert [c.window_start_ts - record.quality[0].window_start_ts for c in record.quality] == \
        pytest.approx([0.0, 1.0, 2.0])
    assert [c.candidates for c in record.quality] == [4, 4, 2]
    assert record.selected == [c.frame_index for c in record.quality]
    assert all(2 <= i < 12 for i in record.selected)
    with Recording.open(db) as rec, pytest.raises(
            FrameSelectionError, match=r"quality window selected no frames in \[0, 12\)"):
        plan_selection(rec, FrameSelectionConfig(quality_window=1.0, min_brightness=1.0))


def test_the_stage_writes_the_selection_and_drops_stale_images(db: Path, tmp_path: Path) -> None:
    with Recording.open(db) as rec:
        everything = prepare_rectified_frames(rec, tmp_path, plan_selection(
            rec, FrameSelectionConfig()))
        assert len(list((tmp_path / "images").iterdir())) == 12 == len(everything.frames)
        fewer = prepare_rectified_frames(rec, tmp_path, plan_selection(
            rec, FrameSelectionConfig(stride=5)))
    assert [f.frame_index for f in read_rectified_frames(tmp_path)] == [0, 5, 10]
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == [
        "frame-000000.png", "frame-000005.png", "frame-000010.png"]
    stored = read_selection_record(tmp_path)
    assert stored == fewer.selection and stored.why == "every 5. frame of [0, 12)"
    assert (fewer.share.bad, fewer.share.frames) == (0, 3)
