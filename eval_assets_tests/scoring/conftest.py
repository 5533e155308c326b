"""A real dataset from the sample recording (3 frames) and hand-written model runs over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.atomic import write_text_atomic
from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.predictions import (
    RUN_ANSWERS,
    RUN_DESCRIPTIONS,
    AnswerRecord,
    DescriptionRecord,
)
from eval_assets.schemas.vqa import Label
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.labels import read_labels

FRAMES = (0, 4, 8)


@pytest.fixture(scope="session")
def sample_dataset(tmp_path_factory: pytest.TempPathFactory, sample_db: Path) -> Path:
    out = tmp_path_factory.mktemp("dataset") / "sample"
    config = PerceptionConfig()
    generate_from_recording(sample_db, out, FRAMES, AuthorConfig(), config.build_detector(),
                            config.build_segmenter())
    return out


def write_run(run_dir: Path, answers: list[AnswerRecord],
              descriptions: list[DescriptionRecord]) -> Path:
    """A predictions run folder as the runner writes it."""
    write_text_atomic(run_dir / RUN_ANSWERS, "".join(a.model_dump_json() + "\n" for a in answers))
    write_text_atomic(run_dir / RUN_DESCRIPTIONS,
                      "".join(d.model_dump_json() + "\n" for d in descriptions))
    return run_dir


def answer(case_id: str, text: str | None, status: str = "success") -> AnswerRecord:
    return AnswerRecord(model="m", config_hash="h", status=status, raw_response=text,
                        attempts=1, case_id=case_id,
                        error_category=None if status == "success" else "server_error")


def description(frame_index: int, text: str | None, status: str = "success") -> DescriptionRecord:
    return DescriptionRecord(model="m", config_hash="h", status=status, raw_response=text,
                             attempts=1, frame=f"frame-{frame_index:06d}",
                             image=f"assets/frame-{frame_index:06d}.png",
                             error_category=None if status == "success" else "timeout")


def labels_of(dataset: Path) -> list[Label]:
    return read_labels(dataset)
