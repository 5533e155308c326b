"""The ``detections_masks`` asset, materialized for real on an ephemeral Dagster instance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from eval_assets.defs.assets.frames import rectified_frames
from eval_assets.defs.assets.ingest import recording_ingest
from eval_assets.defs.assets.perception import detections_masks
from eval_assets.defs.resources import PerceptionResource, ProjectStorage
from eval_assets.layout import StorageLayout
from eval_assets.perception import ConfigurationError, default_vocabulary, read_detections
from eval_assets.perception.evidence_io import DETECTIONS_TABLE, load_mask

MIN_VISIBLE_PX = 150


def _metadata(result, asset: str) -> dict:
    events = [e for e in result.get_asset_materialization_events()
              if e.asset_key.to_user_string() == asset]
    assert len(events) == 1
    return {k: v.value for k, v in events[0].materialization.metadata.items()}


@pytest.mark.slow
def test_detections_masks_materializes_for_the_sample(tmp_path: Path, sample_db: Path) -> None:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])
    storage = ProjectStorage(recordings_dir=str(sample_db.parent), storage_root=str(tmp_path))
    result = materialize(
        [recording_ingest, rectified_frames, detections_masks],
        partition_key="sample",
        instance=instance,
        resources={"storage": storage, "perception": PerceptionResource()},
    )
    assert result.success
    out = StorageLayout(tmp_path).detections_dir("sample")
    meta = _metadata(result, "detections_masks")
    scene = json.loads(sample_db.with_suffix(".scene.json").read_text())
    truth_per_name: dict[str, int] = dict.fromkeys(default_vocabulary(), 0)
    for frame in scene["frames"]:
        for obj in frame["objects"]:
            if obj["visible_pixels"] >= MIN_VISIBLE_PX:
                truth_per_name[obj["name"]] += 1

    assert meta["num_frames"] == len(scene["frames"])
    # hsv-shape/4 says nothing where it is unsure of a shape: on the sample 5 objects (blue box
    # frame 8, yellow box frames 9 and 13, red ball frames 21 and 23) are unsure, never misnamed.
    found = meta["detections_per_name"]
    assert set(found) == set(truth_per_name)
    assert all(found[n] <= truth_per_name[n] for n in truth_per_name), (found, truth_per_name)
    assert 0 <= sum(truth_per_name.values()) - sum(found.values()) <= 5
    assert meta["num_detections"] == sum(found.values())
    assert meta["detector"].startswith("color_shape ")
    assert meta["segmenter"].startswith("box_region ")
    assert meta["table"] == str(out / DETECTIONS_TABLE)
    assert "| frame | name |" in meta["example"] and "masks/frame-000000-00.png" in meta["example"]

    stored = read_detections(out)
    assert [f.frame_index for f in stored] == [f["index"] for f in scene["frames"]]
    assert all(f.queried_names == default_vocabulary() for f in stored)
    for frame in stored:
        for det in frame.detections:
            assert int(load_mask(out, det).sum()) == det.mask_area > 0
    assert len(list((out / "masks").iterdir())) == meta["num_detections"]


def test_a_misconfigured_detector_fails_the_run_and_writes_nothing(
        tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOONDREAM_API_KEY", raising=False)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])
    storage = ProjectStorage(recordings_dir=str(sample_db.parent), storage_root=str(tmp_path))
    with pytest.raises(ConfigurationError, match="MOONDREAM_API_KEY"):
        materialize([detections_masks], partition_key="sample", instance=instance,
                    resources={"storage": storage,
                               "perception": PerceptionResource(detector="moondream")})
    assert not StorageLayout(tmp_path).detections_dir("sample").exists()


@pytest.mark.slow
def test_truth_evidence_on_a_simulated_partition(tmp_path: Path) -> None:
    """The resource's ``truth`` reads the partition's own truth files: exact counts per name."""
    from eval_assets.sim.catalog import CATALOG
    from eval_assets.sim.simulate import SimConfig, simulate_recording

    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = simulate_recording(recordings / "sim.db", SimConfig(seed=3, frames=4, lidar_rings=2,
                                                              lidar_columns=16)).db
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sim"])
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    result = materialize(
        [recording_ingest, rectified_frames, detections_masks], partition_key="sim",
        instance=instance,
        resources={"storage": storage, "perception": PerceptionResource(
            detector="truth", segmenter="truth", vocabulary=list(CATALOG))})
    assert result.success
    meta = _metadata(result, "detections_masks")
    scene = json.loads(db.with_suffix(".scene.json").read_text())
    expected = dict.fromkeys(CATALOG, 0)
    for frame in scene["frames"]:
        for obj in frame["objects"]:
            expected[obj["name"]] += 1
    assert meta["detections_per_name"] == expected and sum(expected.values()) > 0
    assert meta["detector"] == "truth 1" and meta["segmenter"] == "truth 1"


def test_truth_evidence_on_a_partition_without_truth_fails_naming_the_file(
        tmp_path: Path) -> None:
    from eval_assets_tests.factories import make_recording

    recordings = tmp_path / "recordings"
    recordings.mkdir()
    make_recording(recordings / "real.db")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["real"])
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    with pytest.raises(ConfigurationError, match=r"real\.scene\.json does not exist"):
        materialize([detections_masks], partition_key="real", instance=instance,
                    resources={"storage": storage, "perception": PerceptionResource(
                        detector="truth", segmenter="truth")})
    assert not StorageLayout(tmp_path / "out").detections_dir("real").exists()
