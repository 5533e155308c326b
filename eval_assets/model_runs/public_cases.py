"""The public cases of a dataset, as a run loads them: validated, and every file they name kept
inside the dataset's ``assets/`` folder.

This is the one place where a run decides which files of a dataset it may open. A case names its
image by a relative path (``cases.jsonl``'s ``image``, ``spatial_cases.jsonl``'s ``images``);
the path must be relative, under ``assets/``, and — links included — resolve inside the
dataset's resolved ``assets/`` folder. A link to a file elsewhere (a private label, another
dataset, ``/etc``) is refused before any request, so its bytes never reach a model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TypeVar

from pydantic import BaseModel

from eval_assets.errors import InputError
from eval_assets.jsonio import parse_model
from eval_assets.layout import SPATIAL_CASES
from eval_assets.output_errors import too_long_name
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import DATASET_ASSETS, DATASET_CASES, MARKED_ASSETS, Case

_CASE_LINE = ("each line must be a JSON object with exactly id, image, question and choices "
              "(a list of at least 2 strings); regenerate the dataset")
_SPATIAL_LINE = ("each line must be a JSON object with id, images, question, answer_type and "
                 "its choices or unit; regenerate the dataset")

M = TypeVar("M", bound=BaseModel)


class DatasetInputError(InputError, ValueError):
    """A dataset's public files are malformed or name a file outside the dataset (exit 2)."""


def dataset_image(dataset_dir: Path, image: str, where: str, field: str = "image") -> Path:
    """The asset file a case names, refusing anything but a PNG inside ``assets/`` (or, for a
    spatial case's frames with marked objects drawn, ``marked/``).

    ``where`` is ``file:line`` of the case, ``field`` the field naming the image. Links are
    followed: the resolved file must lie inside the resolved dataset's folder it names.
    """
    rel = PurePosixPath(image)
    if (rel.is_absolute() or ".." in rel.parts or len(rel.parts) < 2
            or rel.parts[0] not in (DATASET_ASSETS, MARKED_ASSETS)
            or rel.suffix.lower() != ".png"):
        raise DatasetInputError(
            f"{where}: field {field!r} is {image!r}; it must be a relative path to a PNG inside "
            f"{DATASET_ASSETS}/ (e.g. '{DATASET_ASSETS}/frame-000100.png'); fix the case"
        )
    root = Path(dataset_dir).resolve()
    path = root / rel
    too_long = too_long_name(path)
    if too_long is not None:
        # Before is_file(), which raises the bare "[Errno 36] File name too long" for it.
        raise DatasetInputError(
            f"{where}: field {field!r} names an image no file system here can hold: "
            f"{too_long}; fix: rename the asset and the case's {field!r} to a shorter name "
            f"(the generator writes '{DATASET_ASSETS}/frame-NNNNNN.png')")
    if not path.is_file():
        raise FileNotFoundError(
            f"{where}: image {image!r} does not exist under {root}; copy the asset or "
            f"regenerate the dataset"
        )
    resolved = path.resolve()
    if not resolved.is_relative_to(root / rel.parts[0]):
        # A symbolic link (of the file or a folder on its way) leading out of assets/.
        raise DatasetInputError(
            f"{where}: field {field!r} is {image!r}, which is a link to {resolved}, outside "
            f"the dataset's {root / rel.parts[0]}/; a run sends only files inside the "
            f"dataset; fix: copy the file into {rel.parts[0]}/ instead of linking it"
        )
    return path


def image_checker() -> Callable[..., Path]:
    """:func:`dataset_image` for one read of a dataset, each image name checked once.

    A dataset names each frame from dozens of cases (the demo: 24 images for 790 cases), and
    each check resolves the path twice and stats it: on the demo those repeats were about a
    tenth of the predictions step's own CPU. The first case naming an image is the one checked,
    so a bad image is still reported at its first ``file:line``.
    """
    checked: dict[str, Path] = {}

    def check(folder: Path, image: str, where: str, field: str = "image") -> Path:
        if image not in checked:
            checked[image] = dataset_image(folder, image, where, field)
        return checked[image]

    return check


def load_public_cases(dataset_dir: Path) -> list[Case]:
    """The cases of a public dataset, validated, in file order; their images checked to exist
    inside the dataset (as are the images of ``spatial_cases.jsonl``, when present)."""
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / DATASET_CASES
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; point at a dataset folder (with {DATASET_CASES} and "
            f"{DATASET_ASSETS}/) made by the VQA generator"
        )
    cases: list[Case] = []
    seen: set[str] = set()
    check = image_checker()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        case = _parse(line, Case, where, _CASE_LINE)
        if case.id in seen:
            raise DatasetInputError(f"{where}: field 'id' repeats {case.id!r}; case ids must "
                                    f"be unique, regenerate the dataset")
        seen.add(case.id)
        check(dataset_dir, case.image, where)
        cases.append(case)
    if not cases:
        raise DatasetInputError(f"{path} holds no cases; regenerate the dataset")
    check_spatial_cases(dataset_dir)
    return cases


def check_spatial_cases(dataset_dir: Path) -> list[SpatialCase]:
    """The spatial cases of a dataset (none without ``spatial_cases.jsonl``), each of their
    ``images`` checked like a case's image."""
    path = Path(dataset_dir) / SPATIAL_CASES
    if not path.is_file():
        return []
    cases: list[SpatialCase] = []
    check = image_checker()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        case = _parse(line, SpatialCase, where, _SPATIAL_LINE)
        for k, image in enumerate(case.images):
            check(dataset_dir, image, where, f"images.{k}")
        cases.append(case)
    return cases


def _parse(line: str, model: type[M], where: str, fix: str) -> M:
    try:
        return parse_model(line, model, where, fix=fix)
    except ValueError as exc:  # parse_model's message names file:line, field and fix
        raise DatasetInputError(str(exc)) from exc
