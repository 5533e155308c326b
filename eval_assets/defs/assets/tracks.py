"""Stage 4b: world-frame object tracks — detections fused with LiDAR and TF across frames.

No ``from __future__ import annotations`` here: Dagster 1.13 compares the ``context`` annotation
with the class itself and rejects the string a postponed annotation leaves (dagster#26837).
"""

from collections import Counter

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import PerceptionResource, ProjectStorage
from eval_assets.recording import Recording
from eval_assets.tracks import build_tracks, write_object_tracks

GROUP = "perception"


@asset(key=keys.OBJECT_TRACKS, partitions_def=recordings_partitions, group_name=GROUP,
       deps=[keys.POINTCLOUD_FRAMES, keys.DETECTIONS_MASKS], code_version="10",
       automation_condition=RECOMPUTE, kinds={"json"}, owners=OWNERS)
def object_tracks(context: AssetExecutionContext, storage: ProjectStorage,
                  perception: PerceptionResource) -> MaterializeResult:
    """The objects the LiDAR finds (named only when certain, else marked; or each detection
    lifted, ``perception.objects``), fused across frames into world-frame objects: centre,
    oriented extent, frames seen, pixels per frame, and each frame's object-number image."""
    key = context.partition_key
    layout = storage.layout()
    config = perception.perception_config()
    recording = storage.recording_file(key)
    with Recording.open(recording, allow_pickle=storage.allow_pickle) as rec:
        tracks = build_tracks(rec, layout.rectified_frames_dir(key),
                              layout.pointcloud_frames_dir(key), layout.detections_dir(key),
                              objects=config.object_source(),
                              tracks_dir=layout.tracks_dir(key),
                              namer=config.build_namer(recording))
    path = write_object_tracks(layout.tracks_dir(key), tracks)
    rows = [f"| {t.track_id} | {', '.join(f'{c:.2f}' for c in t.center_world)} | "
            f"{', '.join(f'{e:.2f}' for e in t.extent_m)} | {len(t.frames)} | {t.points} |"
            for t in tracks.tracks]
    preview = "\n".join(["| track | centre (m) | extent (m) | frames | points |",
                         "|---|---|---|---|---|", *rows])
    found = tracks.objects.objects if tracks.objects is not None else []
    return MaterializeResult(metadata={
        "num_tracks": len(tracks.tracks),
        "objects_source": config.object_source(),
        "lidar_objects": len(found),
        "named_objects": sum(1 for o in found if o.name),
        "marked_objects": sum(1 for o in found if o.askable and not o.name),
        "world_frame": tracks.world_frame,
        "skipped_per_reason": MetadataValue.json(
            dict(sorted(Counter(s["reason"] for s in tracks.skipped).items()))),
        "tracks": MetadataValue.path(str(path)),
        "preview": MetadataValue.md(preview),
    })
