"""Stage 1: open and validate a recording, store its inventory."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.atomic import write_text_atomic
from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.frames.admission import admit_recording
from eval_assets.layout import INVENTORY_FILE, selection_file_for

PROBLEMS_SHOWN = 50


@asset(key=keys.RECORDING_INGEST, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECORDING_FILE], code_version="4", automation_condition=RECOMPUTE,
       kinds={"sqlite"}, owners=OWNERS)
def recording_ingest(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """A recording validated at open (streams, codecs, fingerprints, sizes) and inventoried.

    Damaged rows (missing payloads, repeated image timestamps) are reported here and skipped by
    the frame stage; only structural problems fail.
    """
    key = context.partition_key
    path = storage.recording_file(key)
    # Checked again, as at registration: the files may have changed since.
    checked = admit_recording(path, allow_pickle=storage.allow_pickle, name=key)
    selection_file = selection_file_for(path)
    inventory = checked.inventory
    out = storage.layout().ingest_dir(key) / INVENTORY_FILE
    write_text_atomic(out, inventory.model_dump_json(indent=2) + "\n")
    table = "\n".join(
        ["| stream | codec | messages | first ts | last ts |", "|---|---|---|---|---|"]
        + [f"| {s.name} | {s.codec_id} | {s.count} | {s.t_start} | {s.t_end} |"
           for s in inventory.streams]
    )
    problems = "\n".join(
        ["| stream | row id | position | kind | detail |", "|---|---|---|---|---|"]
        + [f"| {p.stream} | {p.row_id} | {p.position} | {p.kind} | {p.detail} |"
           for p in checked.problems[:PROBLEMS_SHOWN]]
        + ([f"| ... | | | | {len(checked.problems) - PROBLEMS_SHOWN} more |"]
           if len(checked.problems) > PROBLEMS_SHOWN else []))
    if checked.problems:
        context.log.warning(f"{path.name}: {checked.summary()}; the frame stage skips such frames")
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
            "selection_file": MetadataValue.text(
                str(selection_file) if selection_file.is_file() else "none: default policy"),
            "num_row_problems": len(checked.problems),
            "row_problems": MetadataValue.md(problems if checked.problems else "none"),
        }
    )
