"""The VQA assets on a real Dagster instance: proposals, then public cases + private labels."""

import json
import shutil
from pathlib import Path
from typing import Any

from dagster import AssetKey, DagsterInstance, ExecuteInProcessResult, materialize

from eval_assets.defs.assets.vqa import question_proposals, vqa_dataset
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage, QuestionAuthorResource
from eval_assets.hashing import file_sha256
from eval_assets.layout import StorageLayout
from eval_assets.schemas.spatial import ObjectTracks
from eval_assets.tracks import write_object_tracks
from eval_assets_tests.vqa.helpers import CANARY, make_stages

KEY = "tiny"


def _metadata(result: ExecuteInProcessResult, key: str) -> dict[str, Any]:
    (event,) = [e for e in result.get_asset_materialization_events()
                if e.asset_key == AssetKey(key)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_proposals_then_dataset(tmp_path: Path) -> None:
    recordings, root = tmp_path / "recordings", tmp_path / "store"
    recordings.mkdir()
    (recordings / f"{KEY}.db").write_bytes(b"not opened by these assets, only hashed")
    layout = StorageLayout(root)
    frames_dir, clouds_dir, dets_dir = make_stages(tmp_path / "stages")
    shutil.copytree(frames_dir, layout.rectified_frames_dir(KEY))
    shutil.copytree(clouds_dir, layout.pointcloud_frames_dir(KEY))
    shutil.copytree(dets_dir, layout.detections_dir(KEY))
    # No LiDAR-fused object in these stages: the spatial file is published empty.
    write_object_tracks(layout.tracks_dir(KEY), ObjectTracks(world_frame="world", tracks=[]))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(recordings_partitions.name, [KEY])
    resources = {
        "storage": ProjectStorage(recordings_dir=str(recordings), storage_root=str(root)),
        "question_author": QuestionAuthorResource(
            vocabulary=["red ball", "blue box", "yellow box", "green cylinder"],
            max_groups_per_family=3, max_group_size=2),
    }
    result = materialize([question_proposals, vqa_dataset], partition_key=KEY,
                         resources=resources, instance=instance)
    assert result.success
    proposals = _metadata(result, "question_proposals")
    cases = _metadata(result, "public_cases")
    labels = _metadata(result, "private_labels")
    assert proposals["num_proposals"] == 3 * (4 * 5 + 3 * 2)
    assert cases["num_cases"] == labels["num_labels"] > 0
    assert cases["cases_per_family"]["presence"] == 3 * 4  # every name, every frame
    assert set(cases["example_case"]) == {"id", "image", "question", "choices"}
    assert labels["rejections_per_reason"]["image_only_frame"] > 0
    out = layout.dataset_dir(KEY)
    run = json.loads((out / "audit/run.json").read_text())
    assert run["source"] == {"name": f"{KEY}.db", "sha256": file_sha256(recordings / f"{KEY}.db")}
    assert run["config"]["perception"]["models"][0]["detector_version"] == CANARY
    assert CANARY not in (out / "cases.jsonl").read_text()
    assert (out / "spatial_cases.jsonl").read_text() == "" and cases["num_spatial_cases"] == 0
    # Rematerialising replaces the published dataset with identical bytes.
    before = (out / "labels.jsonl").read_bytes()
    again = materialize([vqa_dataset], partition_key=KEY, resources=resources, instance=instance)
    assert again.success
    assert (out / "labels.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.parent.iterdir()) == [KEY]
