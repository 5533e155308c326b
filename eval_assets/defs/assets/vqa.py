"""Stages 5 and 6: question proposals, then the public cases and private labels of the dataset.

No ``from __future__ import annotations`` here: Dagster 1.13 compares the ``context`` annotation
with the class itself and rejects the string a postponed annotation leaves (dagster#26837).
"""

from collections.abc import Iterator

from dagster import (
    AssetExecutionContext,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset,
)

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage, QuestionAuthorResource
from eval_assets.frames import read_rectified_frames, read_selection_record, read_skipped_frames
from eval_assets.hashing import file_sha256
from eval_assets.perception.evidence_io import read_detections
from eval_assets.publication import record_dataset
from eval_assets.schemas.spatial import SPATIAL_CASES, SPATIAL_LABELS
from eval_assets.schemas.vqa import DATASET_CASES, DATASET_LABELS, SourceRecording
from eval_assets.tracks import read_object_tracks
from eval_assets.vqa.bias import AUDIT_BIAS_SUMMARY, read_bias_summary
from eval_assets.vqa.generate import build_dataset, generation_audit, perception_summary
from eval_assets.vqa.proposals import (
    iter_frame_proposals,
    iter_proposals,
    read_proposals_summary,
    write_proposals,
)

GROUP = "vqa"


@asset(key=keys.QUESTION_PROPOSALS, partitions_def=recordings_partitions, group_name=GROUP,
       deps=[keys.RECTIFIED_FRAMES, keys.DETECTIONS_MASKS], code_version="1",
       automation_condition=RECOMPUTE, kinds={"json"}, owners=OWNERS)
def question_proposals(context: AssetExecutionContext, storage: ProjectStorage,
                       question_author: QuestionAuthorResource) -> MaterializeResult:
    """What the configured author proposes to ask about each frame, seeing only the image."""
    key = context.partition_key
    layout = storage.layout()
    frames_dir = layout.rectified_frames_dir(key)
    config = question_author.author_config()
    proposals = iter_frame_proposals(question_author.build(), frames_dir,
                                     read_rectified_frames(frames_dir),
                                     config.max_proposals_per_frame)
    path = write_proposals(layout.proposals_dir(key), proposals, config)
    summary = read_proposals_summary(layout.proposals_dir(key))
    return MaterializeResult(metadata={
        "num_proposals": summary["num_proposals"],
        "author": config.author,
        "proposals_per_family": MetadataValue.json(summary["per_family"]),
        "author_errors": MetadataValue.json(summary["author_errors"]),
        "proposals": MetadataValue.path(str(path)),
    })


@multi_asset(
    specs=[
        AssetSpec(keys.PUBLIC_CASES, group_name=GROUP,
                  deps=[keys.QUESTION_PROPOSALS, keys.POINTCLOUD_FRAMES, keys.DETECTIONS_MASKS,
                        keys.OBJECT_TRACKS],
                  code_version="13", automation_condition=RECOMPUTE, kinds={"json"},
                  owners=OWNERS, tags={"visibility": "public"},
                  description="cases.jsonl + spatial_cases.jsonl + assets/ (and "
                              "marked/): all a model under test may see."),
        AssetSpec(keys.PRIVATE_LABELS, group_name=GROUP,
                  deps=[keys.QUESTION_PROPOSALS, keys.POINTCLOUD_FRAMES, keys.DETECTIONS_MASKS,
                        keys.OBJECT_TRACKS],
                  code_version="13", automation_condition=RECOMPUTE, kinds={"json"},
                  owners=OWNERS, tags={"visibility": "private"},
                  description="labels.jsonl + spatial_labels.jsonl + audit/ (dimOS layout): "
                              "answers, evidence."),
    ],
    partitions_def=recordings_partitions,
)
def vqa_dataset(context: AssetExecutionContext, storage: ProjectStorage,
                question_author: QuestionAuthorResource) -> Iterator[MaterializeResult]:
    """Answer every proposal from sensor evidence and publish the dataset in one atomic swap."""
    key = context.partition_key
    layout = storage.layout()
    dets_dir = layout.detections_dir(key)
    recording = storage.recording_file(key)
    out = layout.dataset_dir(key)
    frames_dir = layout.rectified_frames_dir(key)
    config = {"author": question_author.author_config().model_dump(mode="json"),
              "perception": perception_summary(read_detections(dets_dir))}
    summary = build_dataset(
        frames_dir, layout.pointcloud_frames_dir(key), dets_dir,
        iter_proposals(layout.proposals_dir(key)), out,
        SourceRecording(name=recording.name, sha256=file_sha256(recording)), config,
        replace=True, generation=generation_audit(read_selection_record(frames_dir)),
        skipped_frames=[s.model_dump(mode="json") for s in read_skipped_frames(frames_dir)],
        tracks=read_object_tracks(layout.tracks_dir(key)), tracks_dir=layout.tracks_dir(key),
    )
    # What was published, by content: every later run verifies it (eval_assets.publication).
    record_dataset(layout, key)
    example = summary.example_case.model_dump(mode="json") if summary.example_case else {}
    bias = read_bias_summary(out)
    # Private: which families a pixel-free forest solves (audit/bias.json), for the asset page.
    blind = ({family: {"mean_bias_score": f.mean_bias_score, "flagged_share": f.flagged_share,
                       "blind_upper_bound": f.blind_upper_bound}
              for family, f in bias.families.items()} if bias is not None else {})
    yield MaterializeResult(asset_key=keys.PUBLIC_CASES, metadata={
        "num_cases": summary.num_cases,
        "cases_per_family": MetadataValue.json(summary.cases_per_family),
        "example_case": MetadataValue.json(example),
        "cases": MetadataValue.path(str(out / DATASET_CASES)),
        "num_spatial_cases": sum(summary.spatial_cases_per_family.values()),
        "spatial_cases_per_family": MetadataValue.json(summary.spatial_cases_per_family),
        "spatial_cases": MetadataValue.path(str(out / SPATIAL_CASES)),
        "dataset": MetadataValue.path(str(out)),
    })
    yield MaterializeResult(asset_key=keys.PRIVATE_LABELS, metadata={
        "num_labels": summary.num_cases,
        "num_proposals": summary.num_proposals,
        "labels_per_family": MetadataValue.json(summary.cases_per_family),
        "rejections_per_reason": MetadataValue.json(summary.rejections_per_reason),
        "labels": MetadataValue.path(str(out / DATASET_LABELS)),
        "spatial_rejections_per_reason": MetadataValue.json(
            summary.spatial_rejections_per_reason),
        # The gold answers' distribution per family and the most common one's share (what a
        # guess of it scores): private, as the answers are.
        "answers_per_family": MetadataValue.json(
            {f: b.model_dump(mode="json") for f, b in summary.answers_per_family.items()}),
        "spatial_answers_per_family": MetadataValue.json(
            {f: b.model_dump(mode="json") for f, b in summary.spatial_answers_per_family.items()}),
        "spatial_labels": MetadataValue.path(str(out / SPATIAL_LABELS)),
        "blind_solvability": MetadataValue.json(blind),
        "bias_audit": MetadataValue.path(str(out / "audit" / AUDIT_BIAS_SUMMARY)),
    })
