"""Stage 1: open and validate a recording, store its inventory."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.atomic import write_text_atomic
from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.recording.validate import validate_recording


@asset(key=keys.RECORDING_INGEST, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECORDING_FILE], code_version="2", automation_condition=RECOMPUTE,
       kinds={"sqlite"}, owners=OWNERS)
def recording_ingest(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """A recording validated at open (streams, codecs, fingerprints, sizes) and inventoried."""
    key = context.partition_key
    path = storage.recording_file(key)
    # Every row decoded, as at registration: the file may have been replaced since.
    inventory = validate_recording(path, allow_pickle=storage.allow_pickle, name=key).inventory
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
