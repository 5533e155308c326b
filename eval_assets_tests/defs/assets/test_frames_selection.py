"""Frame selection and bad frames on a real Dagster instance: the recording's selection file
decides the frames, bad ones are skipped and named, the dataset is made from the rest."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult, materialize

from eval_assets.defs.assets.frames import pointcloud_frames, rectified_frames
from eval_assets.defs.assets.ingest import recording_ingest
from eval_assets.defs.assets.perception import detections_masks
from eval_assets.defs.assets.sources import recording_versions
from eval_assets.defs.assets.tracks import object_tracks
from eval_assets.defs.assets.vqa import question_proposals, vqa_dataset
from eval_assets.defs.resources import PerceptionResource, ProjectStorage, QuestionAuthorResource
from eval_assets.frames import TooManyBadFramesError, read_skipped_frames
from eval_assets.hashing import file_sha256
from eval_assets.layout import StorageLayout
from eval_assets_tests.frames import damage

KEY = "hall"
CHAIN = [recording_ingest, rectified_frames, pointcloud_frames, detections_masks, object_tracks,
         question_proposals, vqa_dataset]


def _metadata(result: ExecuteInProcessResult, key: str) -> dict[str, Any]:
    (event,) = [e for e in result.get_asset_materialization_events()
                if e.asset_key == AssetKey(key)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.fixture
def setup(tmp_path: Path, sample_db: Path) -> tuple[Path, ProjectStorage, DagsterInstance]:
    """A copy of the sample with frame 2's JPEG garbage, frame 4's payload gone and frame 6
    written twice (the copy is frame 7)."""
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = recordings / f"{KEY}.db"
    shutil.copy(sample_db, db)
    damage.undecodable_jpeg(db, 2)
    damage.missing_blob(db, "color_image", 4)
    damage.duplicate_image(db, 6)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", [KEY])
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    return db, storage, instance


def test_bad_frames_are_skipped_and_the_dataset_is_made_from_the_rest(setup) -> None:
    db, storage, instance = setup
    resources = {"storage": storage, "perception": PerceptionResource(),
                 "question_author": QuestionAuthorResource()}
    selection = db.with_name(f"{KEY}.selection.yaml")
    selection.write_text("stop: 9  # frames 0-8\n")
    # Two bad frames of eight (the identical copy does not count): over the default 0.2.
    too_many = (r"hall.db: 2 of 8 examined frames are bad \(25% > max_bad_fraction 0.2\).*"
                + re.escape(str(selection)))
    with pytest.raises(TooManyBadFramesError, match=too_many):
        materialize(CHAIN[:2], partition_key=KEY, instance=instance, resources=resources)

    selection.write_text("stop: 9\nmax_bad_fraction: 0.3\n")
    result = materialize(CHAIN, partition_key=KEY, instance=instance, resources=resources)
    assert result.success
    layout = StorageLayout(Path(storage.storage_root))
    ingest = _metadata(result, "recording_ingest")
    assert ingest["num_row_problems"] == 2  # the missing payload and the copy, seen at the door
    assert ingest["selection_file"] == str(selection)

    rect = _metadata(result, "rectified_frames")
    assert (rect["num_frames"], rect["num_selected"], rect["num_examined"]) == (6, 9, 9)
    assert (rect["num_skipped"], rect["num_bad"], rect["bad_fraction"]) == (3, 2, 0.25)
    assert rect["selection_mode"] == "every_frame" and rect["selection_why"] == \
        "every frame of [0, 9)"
    assert rect["selection_config"] == {"stop": 9, "max_bad_fraction": 0.3}
    assert rect["selected_frames"] == "0-8"
    assert rect["skipped_reasons"] == {"duplicate_row": 1, "missing_blob": 1,
                                       "undecodable_image": 1}
    assert "| 2 | color_image |" in rect["skipped_frames"] and "undecodable_image" in \
        rect["skipped_frames"]
    frames_dir = layout.rectified_frames_dir(KEY)
    skipped = read_skipped_frames(frames_dir)
    assert [(s.frame_index, s.reason) for s in skipped] == [
        (2, "undecodable_image"), (4, "missing_blob"), (7, "duplicate_row")]
    assert all(s.recording == str(db) and s.fix for s in skipped)

    assert _metadata(result, "pointcloud_frames")["num_frames"] == 6
    assert _metadata(result, "detections_masks")["num_frames"] == 6
    assert _metadata(result, "public_cases")["num_cases"] > 0
    run = json.loads((layout.dataset_dir(KEY) / "audit" / "run.json").read_text())
    assert run["frame_indices"] == [0, 1, 3, 5, 6, 8]
    # The audit names every skipped frame and why, and records the selection dimOS's way.
    assert [(s["frame_index"], s["reason"]) for s in run["skipped_frames"]] == [
        (2, "undecodable_image"), (4, "missing_blob"), (7, "duplicate_row")]
    assert run["generation"]["dataset"] == db.name and run["generation"]["mode"]


def test_the_selection_file_is_part_of_the_recording_version(setup) -> None:
    db, storage, _ = setup
    plain = recording_versions(storage, [KEY, "absent"])
    assert plain == {KEY: file_sha256(db)}  # no selection file: the file's own hash
    selection = db.with_name(f"{KEY}.selection.yaml")
    selection.write_text("stride: 2\n")
    with_file = recording_versions(storage, [KEY])[KEY]
    selection.write_text("stride: 3\n")
    edited = recording_versions(storage, [KEY])[KEY]
    assert len({plain[KEY], with_file, edited}) == 3
    selection.unlink()
    assert recording_versions(storage, [KEY]) == plain
