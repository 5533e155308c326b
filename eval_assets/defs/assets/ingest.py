"""Stage 1: open and validate a recording, store its inventory."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.atomic import write_text_atomic
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.recording import Recording
from eval_assets.recording.inventory import inventory_of


@asset(partitions_def=recordings_partitions, group_name="frames")
def recording_ingest(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """A recording validated at open (streams, codecs, fingerprints, sizes) and inventoried."""
    key = context.partition_key
    path = storage.recording_file(key)
    with Recording.open(path, allow_pickle=storage.allow_pickle) as rec:
        inventory = inventory_of(rec, key)
    out = storage.layout().ingest_dir(key) / "inventory.json"
    write_text_atomic(out, inventory.model_dump_json(indent=2) + "\n")
    table = "\n".join(
        ["| stream | codec | messages | first ts | last ts |", "|---|---|---|---|---|"]
        + [f"| {s.name} | {s.codec_id} | {s.count} | {s.t_start} | {s.t_end} |"
           for s in inventory.streams]
    )
    return MaterializeResult(
        metadata={
            "path": MetadataValue.path(str(path)),
            "sha256": inventory.sha256,
            "size_bytes": inventory.size_bytes,
            "image_count": inventory.image_count,
            "lidar_stream": inventory.lidar_stream,
            "duration_s": round(inventory.duration_s, 3),
            "streams": MetadataValue.md(table),
            "inventory": MetadataValue.path(str(out)),
        }
    )
