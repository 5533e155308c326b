"""The shipped offline judge (blind SmolLM2, ``data/judge.yaml``) on the sample's calibration set.

Real throughout: the sample recording's dataset and private evidence, the human annotations, the
project's local model server started by ``serve: blind-smollm2``, and the ``score judge`` CLI.
SmolLM2-135M is also a model under test and cannot read the rubric (it gave image-blind
descriptions 10/10), so the gate must withhold its scores, quickly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.atomic import write_text_atomic
from eval_assets.cli import app
from eval_assets.jsonio import write_jsonl
from eval_assets.layout import (
    AVLM_JUDGE_PREDICTIONS,
    AVLM_JUDGE_RESULTS,
    AVLM_PREDICTIONS,
    default_annotations_dir,
)
from eval_assets.model_runs.prompts import DESCRIPTION_PROMPT
from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.predictions import RUN_ANSWERS, RUN_DESCRIPTIONS, DescriptionRecord
from eval_assets.scoring.inputs import load_annotations, load_private_dataset, load_run
from eval_assets.scoring.judge import avlm_description_rows
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording

REPO = Path(__file__).resolve().parents[2]
ANNOTATED = (0, 4, 8, 12, 16, 20)


def _annotations(dataset: Path) -> dict[int, FrameAnnotation]:
    """The bundled annotations of the sample, attached to the dataset's frames by image hash."""
    loaded = load_annotations(default_annotations_dir(), "sample", dataset)
    assert loaded is not None and not loaded.unmatched
    return loaded.by_frame


def description_rows(tmp_path: Path, sample_db: Path) -> Path:
    """The description judge's inference folder, as the pipeline builds it for the sample."""
    dataset = tmp_path / "dataset"
    perception = PerceptionConfig()
    generate_from_recording(sample_db, dataset, ANNOTATED, AuthorConfig(),
                            perception.build_detector(), perception.build_segmenter())
    run = tmp_path / "run"
    records = [DescriptionRecord(model="blind-smollm2", config_hash="h", status="success",
                                 raw_response="A kitchen with a table and two chairs.",
                                 attempts=1, frame=f"frame-{i:06d}",
                                 image=f"assets/frame-{i:06d}.png") for i in ANNOTATED]
    write_text_atomic(run / RUN_ANSWERS, "")
    write_text_atomic(run / RUN_DESCRIPTIONS, "".join(r.model_dump_json() + "\n"
                                                      for r in records))
    rows = avlm_description_rows(load_private_dataset(dataset), load_run(run),
                                 _annotations(dataset),
                                 DESCRIPTION_PROMPT)
    folder = tmp_path / "description_judge"
    write_jsonl(folder / AVLM_PREDICTIONS, rows, sort_keys=True)
    return folder


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_blind_smollm2_fails_calibration_and_is_withheld(tmp_path: Path, sample_db: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVAL_ASSETS_MODELS", raising=False)  # the repository's models.yaml
    folder = description_rows(tmp_path, sample_db)
    started = time.monotonic()
    result = CliRunner().invoke(app, ["score", "judge", str(folder), "--judge-config",
                                      str(REPO / "data" / "judge.yaml")])
    wall_s = time.monotonic() - started
    assert result.exit_code == 1, result.output
    summary = json.loads((folder / AVLM_JUDGE_RESULTS).read_text())
    calibration = summary["calibration"]
    print(f"\nblind-smollm2 calibration: agreement {calibration['agreement']:.0%} "
          f"({calibration['agreed']}/{calibration['evaluated']} of {calibration['planned']} "
          f"pairs), CLI wall time {wall_s:.1f} s (model load included)\n{result.stdout}")
    assert summary["status"].startswith("withheld: judge failed calibration (agreement ")
    assert calibration["status"] == "failed" and calibration["agreement"] < 0.75
    assert summary["mean_score"] is None and summary["total_judged"] == 0
    assert summary["num_withheld"] == 6
    assert summary["self_judging"] is True and summary["self_judging_models"] == ["blind-smollm2"]
    # Every pair was judged against the frame's real evidence, not an empty one.
    assert all(pair["reference_score"] is not None for pair in calibration["pairs"])
    predictions = json.loads((folder / AVLM_JUDGE_PREDICTIONS).read_text())
    assert predictions["results"] == [] and predictions["metadata"]["self_judging"] is True
    # The cost is counted in calls, not seconds (a shared CPU makes those vary fivefold): the
    # first frame's reference and three corruptions, then the early stop. Judging every row took
    # minutes; each of these calls takes ~2 s on two idle cores.
    assert calibration["evaluated"] == 3 and calibration["stopped_early"]
    assert "journal: 4 calls made, 0 replies replayed" in result.stdout
