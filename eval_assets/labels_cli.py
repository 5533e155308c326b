"""``eval-assets labels``: record a correction of a gold answer, and list them.

    eval-assets labels override --recording sample --case ID --answer A --by NAME --reason TEXT
    eval-assets labels list [--recording sample]
    eval-assets labels migrate-annotations --recording sample

A correction is appended to ``data/labels/<recording>.overrides.jsonl`` (``$EVAL_ASSETS_LABELS``
or ``--labels-dir`` to keep them elsewhere) with the content hash of the case it corrects, taken
from the recording's published dataset under the storage root. The next ``eval-assets run``
applies it: the metrics that read gold answers are recomputed, no model is asked again.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from eval_assets.cli_errors import guarded
from eval_assets.cli_options import CORRECTION, INPUT, storage_root_option
from eval_assets.errors import InputError
from eval_assets.layout import (
    OVERRIDES_SUFFIX,
    StorageLayout,
    default_labels_dir,
    default_storage_root,
    overrides_file_for,
)

labels_app = typer.Typer(no_args_is_help=True,
                         help="Correct gold answers (label overrides) and list the corrections.")

_STORAGE = storage_root_option("Storage root holding the published datasets (default "
                               "$EVAL_ASSETS_HOME or ./.eval_assets).", panel=INPUT)
_LABELS = typer.Option(None, help="Folder of the overrides files "
                       "(default $EVAL_ASSETS_LABELS or data/labels).", rich_help_panel=INPUT)


def _layout(storage_root: Path | None) -> StorageLayout:
    return StorageLayout(storage_root.resolve() if storage_root else default_storage_root())


# The advice read_labels ends with: a regeneration `eval-assets run` does not do by itself.
_REGENERATE = re.compile(r"[;.,]?\s*(fix: )?regenerate (it|the dataset|the file)\b.*$",
                         re.IGNORECASE | re.DOTALL)


def republish_fix(layout: StorageLayout, recording: str) -> str:
    """How to publish ``recording``'s dataset again from its recording: Dagster keeps it as
    materialized whatever became of its files, so its record is wiped first (checked: the next
    ``eval-assets run`` then rebuilds it, and asks no model again)."""
    return (f"publish it again from the recording: `DAGSTER_HOME={layout.dagster_home()} "
            "dagster asset wipe public_cases private_labels --noprompt`, then `eval-assets run "
            f"<{recording}'s recording file>` (it rebuilds the dataset and rescores; the models' "
            "answers are journalled and not asked again), then record the override")


def _edited(layout: StorageLayout, recording: str, dataset: Path, why: str) -> InputError:
    return InputError(
        f"{dataset} is not as it was published ({why}): its files were edited or damaged "
        "after publishing, so the gold answer in force cannot be told and no override was "
        f"recorded. Fix: {republish_fix(layout, recording)}")


@labels_app.command("override")
@guarded
def override(
    recording: str = typer.Option(..., help="The recording (its partition key: file stem).",
                                  rich_help_panel=CORRECTION),
    case: str = typer.Option(..., help="The case id (from the dataset's cases.jsonl).",
                             rich_help_panel=CORRECTION),
    answer: str = typer.Option(..., help="The correct answer: one of the case's choices.",
                               rich_help_panel=CORRECTION),
    by: str = typer.Option(..., help="Who makes the correction.", rich_help_panel=CORRECTION),
    reason: str = typer.Option(..., help="Why the gold answer is wrong.",
                               rich_help_panel=CORRECTION),
    storage_root: Path | None = _STORAGE,
    labels_dir: Path | None = _LABELS,
) -> None:
    """Record that CASE's gold answer should be ANSWER (appended; applied on the next run)."""
    from eval_assets.jsonio import read_jsonl
    from eval_assets.schemas.vqa import DATASET_CASES, DATASET_LABELS, Case
    from eval_assets.vqa.labels import read_labels
    from eval_assets.vqa.overrides import record_override

    layout = _layout(storage_root)
    dataset = layout.dataset_dir(recording)
    path = overrides_file_for(labels_dir or default_labels_dir(), recording)
    try:
        labels = read_labels(dataset) if dataset.is_dir() else []
    except ValueError as exc:  # the labels disagree with the cases or their audit copy
        raise _edited(layout, recording, dataset, _REGENERATE.sub("", str(exc))) from None
    cases = dataset / DATASET_CASES
    if labels and cases.is_file():
        unlabelled = sorted({c.id for c in read_jsonl(cases, Case)} - {lab.id for lab in labels})
        if unlabelled:
            raise _edited(layout, recording, dataset, f"cases without a label in "
                          f"{DATASET_LABELS}: {unlabelled[:3]}")
    record = record_override(dataset, path, labels, case_id=case, answer=answer, by=by,
                             reason=reason)
    typer.echo(f"{path}: {record.case_id}: {record.old_answer!r} -> {record.new_answer!r} "
               f"(by {record.by}, {record.at}, content {record.content_sha256[:12]})")
    typer.echo("the next `eval-assets run` recomputes the metrics that read gold answers; "
               "no model is asked again")


@labels_app.command("list")
@guarded
def list_overrides(
    recording: str | None = typer.Option(None, help="Only this recording (default: all).",
                                         rich_help_panel=INPUT),
    storage_root: Path | None = _STORAGE,
    labels_dir: Path | None = _LABELS,
) -> None:
    """Every override and its state against the current dataset (applied, orphaned, ...)."""
    from eval_assets.scoring.inputs import load_private_dataset
    from eval_assets.vqa.overrides import INVALID, STATE_TEXT, read_overrides

    folder = (labels_dir or default_labels_dir()).resolve()
    names = ([recording] if recording else
             sorted(p.name[:-len(OVERRIDES_SUFFIX)] for p in folder.glob(f"*{OVERRIDES_SUFFIX}")))
    layout = _layout(storage_root)
    for name in names:
        path = overrides_file_for(folder, name)
        overrides = read_overrides(path)
        dataset = layout.dataset_dir(name)
        if not dataset.is_dir():
            typer.echo(f"{path}: {len(overrides)} overrides; no published dataset of {name} "
                       f"under {layout.root}, so their state is unknown")
            continue
        resolution = load_private_dataset(dataset, path).overrides
        assert resolution is not None  # an overrides file was passed
        typer.echo(f"{path}: {resolution.summary()}")
        for state in resolution.states:
            item = state.override
            typer.echo(f"  {item.at} {item.case_id}: {item.old_answer!r} -> "
                       f"{item.new_answer!r} by {item.by} ({item.reason}): "
                       f"{STATE_TEXT[state.state]}")
            if (problem := state.problem(path)) is not None and state.state in INVALID:
                typer.echo(f"    {problem}")
    if not names:
        typer.echo(f"no overrides in {folder}")


@labels_app.command("migrate-annotations")
@guarded
def migrate_annotations_command(
    recording: str = typer.Option(..., help="The recording whose annotations to migrate.",
                                  rich_help_panel=INPUT),
    storage_root: Path | None = _STORAGE,
    annotations_dir: Path | None = typer.Option(
        None, help="Folder of the annotations (default $EVAL_ASSETS_ANNOTATIONS or "
        "data/annotations).", rich_help_panel=INPUT),
) -> None:
    """Key an old annotations file (by frame index) by each frame's image hash, once.

    Check first that the recording's published frames are the ones that were annotated: from
    then on an annotation attaches to its image only, wherever that frame is.
    """
    from eval_assets.layout import default_annotations_dir
    from eval_assets.scoring.inputs import migrate_annotations

    path = (annotations_dir or default_annotations_dir()) / f"{recording}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist. Fix: pass --annotations-dir or the "
                                "recording's name")
    changed = migrate_annotations(path, _layout(storage_root).dataset_dir(recording))
    typer.echo(f"{path}: {changed} annotations keyed by their frame's image hash")
