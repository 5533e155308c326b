"""The first three assets, materialized for real on an ephemeral Dagster instance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from eval_assets.defs.assets.frames import pointcloud_frames, rectified_frames
from eval_assets.defs.assets.ingest import recording_ingest
from eval_assets.defs.resources import ProjectStorage
from eval_assets.layout import StorageLayout
from eval_assets.recording import Recording, RecordingError

SCENE = "sample.scene.json"


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory, sample_db: Path):
    root = tmp_path_factory.mktemp("storage")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])
    storage = ProjectStorage(recordings_dir=str(sample_db.parent), storage_root=str(root))
    result = materialize(
        [recording_ingest, rectified_frames, pointcloud_frames],
        partition_key="sample",
        instance=instance,
        resources={"storage": storage},
    )
    return result, StorageLayout(root)


def _metadata(result, asset: str) -> dict:
    events = [e for e in result.get_asset_materialization_events()
              if e.asset_key.to_user_string() == asset]
    assert len(events) == 1
    return {k: v.value for k, v in events[0].materialization.metadata.items()}


@pytest.mark.slow
def test_three_assets_materialize_for_the_sample(materialized, sample_db: Path) -> None:
    result, layout = materialized
    assert result.success
    with Recording.open(sample_db) as rec:
        n_images = rec.streams["color_image"].count
        sha = rec.sha256

    ingest = _metadata(result, "recording_ingest")
    assert ingest["sha256"] == sha
    assert ingest["image_count"] == n_images
    inventory = json.loads((layout.ingest_dir("sample") / "inventory.json").read_text())
    assert {s["name"] for s in inventory["streams"]} >= {"color_image", "camera_info", "tf"}

    rect = _metadata(result, "rectified_frames")
    assert rect["num_frames"] == n_images
    table = pq.read_table(layout.rectified_frames_dir("sample") / "frames.parquet")
    assert table.num_rows == n_images
    for rel in table.column("image_path").to_pylist():
        assert (layout.rectified_frames_dir("sample") / rel).is_file()

    clouds = _metadata(result, "pointcloud_frames")
    scene = json.loads((sample_db.parent / SCENE).read_text())
    far = [f for f in scene["frames"] if f["lidar_dt"] is None or abs(f["lidar_dt"]) > 0.1]
    assert clouds["num_image_only"] == len(far) > 0
    assert clouds["num_with_lidar"] == n_images - len(far)


def test_ingest_rejects_a_corrupt_recording(tmp_path: Path, sample_db: Path) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    broken = recordings / "broken.db"
    data = sample_db.read_bytes()
    broken.write_bytes(data[: len(data) // 3])
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["broken"])
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    with pytest.raises(RecordingError, match=r"broken\.db"):
        materialize([recording_ingest], partition_key="broken", instance=instance,
                    resources={"storage": storage})
    assert not (tmp_path / "out" / "assets" / "recording_ingest" / "broken").exists()


def test_copy_of_sample_is_valid(tmp_path: Path, sample_db: Path) -> None:
    copy = tmp_path / "copy.db"
    shutil.copy(sample_db, copy)
    with Recording.open(copy) as rec:
        assert rec.sha256 == Recording.open(sample_db).sha256
