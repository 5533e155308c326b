"""Stage 4: perception evidence — detections and masks of every vocabulary name in every frame.

No ``from __future__ import annotations`` here: Dagster 1.13 compares the ``context`` annotation
with the class itself and rejects the string a postponed annotation leaves (dagster#26837).
"""

from collections import Counter
from collections.abc import Sequence

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import PerceptionResource, ProjectStorage
from eval_assets.frames import read_rectified_frames
from eval_assets.perception import TRUTH
from eval_assets.perception.evidence_io import DETECTIONS_TABLE, build_detections
from eval_assets.schemas.perception import FrameDetections

GROUP = "perception"
EXAMPLE_ROWS = 12


@asset(key=keys.DETECTIONS_MASKS, partitions_def=recordings_partitions, group_name=GROUP,
       deps=[keys.RECTIFIED_FRAMES], code_version="4", automation_condition=RECOMPUTE,
       kinds={"opencv"}, owners=OWNERS)
def detections_masks(context: AssetExecutionContext, storage: ProjectStorage,
                     perception: PerceptionResource) -> MaterializeResult:
    """Every vocabulary name queried in every rectified frame: boxes, scores, masks, models."""
    key = context.partition_key
    layout = storage.layout()
    frames_dir = layout.rectified_frames_dir(key)
    # Only the truth evidence reads the recording's own files (its truth sidecars).
    truth = TRUTH in (perception.detector, perception.segmenter)
    detector, segmenter = perception.build(storage.recording_file(key) if truth else None)
    out_dir = layout.detections_dir(key)
    frames = build_detections(frames_dir, read_rectified_frames(frames_dir), out_dir,
                              perception.perception_config().names(), detector, segmenter)
    return MaterializeResult(metadata={
        "num_frames": len(frames),
        "num_detections": sum(len(f.detections) for f in frames),
        "detections_per_name": MetadataValue.json(_per_name(frames)),
        "detector": f"{detector.name} {detector.version}",
        "segmenter": f"{segmenter.name} {segmenter.version}",
        "table": MetadataValue.path(str(out_dir / DETECTIONS_TABLE)),
        "folder": MetadataValue.path(str(out_dir)),
        "example": MetadataValue.md(_example_table(frames)),
    })


def _per_name(frames: Sequence[FrameDetections]) -> dict[str, int]:
    """Detections per queried name over all frames, zero for names never found, query order."""
    counts = Counter(d.name for f in frames for d in f.detections)
    names = dict.fromkeys(n for f in frames for n in f.queried_names)
    return {n: counts.get(n, 0) for n in names}


def _example_table(frames: Sequence[FrameDetections]) -> str:
    rows = [f"| {f.frame_index} | {d.name} | {', '.join(f'{v:.0f}' for v in d.box_xyxy)} | "
            f"{d.score:.2f} | {d.mask_area} | {d.mask_path} |"
            for f in frames for d in f.detections][:EXAMPLE_ROWS]
    return "\n".join(["| frame | name | box (x0, y0, x1, y1) | score | mask px | mask |",
                      "|---|---|---|---|---|---|", *rows])
