"""Stages 2 and 3: rectified frames and their synchronised point clouds."""

from collections import Counter

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.frames import (
    SkippedFrame,
    build_pointcloud_frames,
    load_selection_config,
    plan_selection,
    prepare_rectified_frames,
    read_rectified_frames,
)
from eval_assets.frames.selection import compact_indices
from eval_assets.layout import (
    POINTCLOUD_TABLE,
    RECTIFIED_TABLE,
    SELECTION_FILE,
    SKIPPED_FRAMES_FILE,
    selection_file_for,
)
from eval_assets.recording import Recording


@asset(key=keys.RECTIFIED_FRAMES, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECORDING_INGEST], code_version="4", automation_condition=RECOMPUTE,
       kinds={"opencv", "parquet"}, owners=OWNERS)
def rectified_frames(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """The selected colour frames undistorted with their recorded calibration: PNGs +
    ``frames.parquet``, with ``selection.json`` (what was selected and why) and
    ``skipped_frames.json`` (each bad frame left out, with its reason and fix).

    The selection is ``<recording>.selection.yaml`` beside the recording, or the default policy;
    frames are chosen before any is rectified. Fails only when more than ``max_bad_fraction`` of
    the examined frames is bad.
    """
    key = context.partition_key
    out_dir = storage.layout().rectified_frames_dir(key)
    recording = storage.recording_file(key)
    selection_file = selection_file_for(recording)
    config = load_selection_config(selection_file)
    with Recording.open(recording, allow_pickle=storage.allow_pickle) as rec:
        plan = plan_selection(rec, config,
                              config_file=selection_file if selection_file.is_file() else None)
        prepared = prepare_rectified_frames(rec, out_dir, plan)
    frames, selection, skipped = prepared.frames, prepared.selection, prepared.skipped
    if skipped:
        context.log.warning(f"{recording.name}: {len(skipped)} frames skipped "
                            f"({_reason_counts(skipped)}); see {out_dir / SKIPPED_FRAMES_FILE}")
    first = frames[0]
    preview = out_dir / first.image_path
    return MaterializeResult(
        metadata={
            "num_frames": len(frames),
            "num_selected": len(selection.selected),
            "num_examined": selection.examined,
            "num_skipped": len(skipped),
            "num_bad": prepared.share.bad,
            "bad_fraction": round(prepared.share.fraction, 4),
            "max_bad_fraction": plan.max_bad_fraction,
            "selection_mode": selection.mode,
            "selection_why": selection.why,
            "selection_file": MetadataValue.text(selection.config_file or "none: default policy"),
            "selection_config": MetadataValue.json(
                selection.config.model_dump(mode="json", exclude_none=True)),
            "selected_frames": MetadataValue.text(compact_indices(selection.selected)),
            "skipped_reasons": MetadataValue.json(_reason_counts_json(skipped)),
            "skipped_frames": MetadataValue.md(_skipped_table(skipped)),
            "skipped_file": MetadataValue.path(str(out_dir / SKIPPED_FRAMES_FILE)),
            "selection": MetadataValue.path(str(out_dir / SELECTION_FILE)),
            "table": MetadataValue.path(str(out_dir / RECTIFIED_TABLE)),
            "folder": MetadataValue.path(str(out_dir)),
            "distortion_model": first.distortion_model,
            "K_rect": MetadataValue.json(first.K_rect),
            "preview": MetadataValue.md(f"![frame {first.frame_index}]({preview.as_uri()})"),
        }
    )


SKIPPED_SHOWN = 50


def _reason_counts_json(skipped: list[SkippedFrame]) -> dict[str, int]:
    return dict(sorted(Counter(s.reason for s in skipped).items()))


def _reason_counts(skipped: list[SkippedFrame]) -> str:
    return ", ".join(f"{n} {r}" for r, n in _reason_counts_json(skipped).items())


def _skipped_table(skipped: list[SkippedFrame]) -> str:
    if not skipped:
        return "none"
    rows = [f"| {s.frame_index} | {s.stream} | {s.row_id if s.row_id is not None else ''} | "
            f"{s.reason} | {s.detail} | {s.fix} |" for s in skipped[:SKIPPED_SHOWN]]
    if len(skipped) > SKIPPED_SHOWN:
        rows.append(f"| ... | | | | {len(skipped) - SKIPPED_SHOWN} more in "
                    f"{SKIPPED_FRAMES_FILE} | |")
    return "\n".join(["| frame | stream | row id | reason | detail | fix |",
                      "|---|---|---|---|---|---|", *rows])


@asset(key=keys.POINTCLOUD_FRAMES, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECTIFIED_FRAMES], code_version="3", automation_condition=RECOMPUTE,
       kinds={"numpy", "parquet"}, owners=OWNERS)
def pointcloud_frames(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Each frame's LiDAR scan (within 0.1 s) and camera transform, or why it is image-only."""
    key = context.partition_key
    layout = storage.layout()
    frames = read_rectified_frames(layout.rectified_frames_dir(key))
    out_dir = layout.pointcloud_frames_dir(key)
    with Recording.open(storage.recording_file(key), allow_pickle=storage.allow_pickle) as rec:
        clouds = build_pointcloud_frames(rec, frames, out_dir)
    # An image-only frame always has its reason (the record checks it).
    reasons = Counter(c.reason for c in clouds if c.status == "image_only" and c.reason)
    rows = [
        f"| {c.frame_index} | {c.status} | "
        f"{'' if c.lidar_dt is None else f'{c.lidar_dt:+.3f}'} | "
        f"{c.n_points_in_front} | {c.reason or ''} |"
        for c in clouds
    ]
    preview = "\n".join(["| frame | status | LiDAR dt (s) | points in front | reason |",
                         "|---|---|---|---|---|", *rows])
    return MaterializeResult(
        metadata={
            "num_frames": len(clouds),
            "num_with_lidar": sum(c.status == "ok" for c in clouds),
            "num_image_only": sum(c.status == "image_only" for c in clouds),
            "image_only_reasons": MetadataValue.json(dict(sorted(reasons.items(), key=str))),
            "table": MetadataValue.path(str(out_dir / POINTCLOUD_TABLE)),
            "preview": MetadataValue.md(preview),
        }
    )
