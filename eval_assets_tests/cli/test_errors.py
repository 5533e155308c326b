"""Every CLI error is a short message naming the file and the fix, with exit code 2 for bad input,
and a corrupt recording never becomes a partition."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.layout import StorageLayout

runner = CliRunner()


def _corrupt_copy(sample_db: Path, tmp_path: Path) -> Path:
    db = tmp_path / "broken.db"
    shutil.copy(sample_db, db)
    with db.open("r+b") as f:
        f.seek(2_000_000)
        f.write(b"\x00" * 50_000)
    return db


def test_a_corrupt_recording_is_a_short_error_and_never_a_partition(
    tmp_path: Path, sample_db: Path
) -> None:
    db = _corrupt_copy(sample_db, tmp_path)
    root = tmp_path / "out"
    # A partition could only come from an earlier run: make the instance exist first.
    home = StorageLayout(root).dagster_home()
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

    result = runner.invoke(app, ["run", str(db), "--storage-root", str(root)])

    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert str(db) in result.output and "Fix:" in result.output
    assert len(result.output.splitlines()) <= 4
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_dynamic_partitions("recordings") == []


def test_debug_shows_the_traceback(tmp_path: Path, sample_db: Path) -> None:
    db = _corrupt_copy(sample_db, tmp_path)
    result = runner.invoke(app, ["--debug", "run", str(db), "--storage-root",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "Traceback" in result.output and "RecordingError" in result.output


def test_a_missing_recording_file_is_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(tmp_path / "nowhere.db")])
    assert result.exit_code == 2 and "file not found" in result.output
    assert "Traceback" not in result.output


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A fresh interpreter: the models file is read when the Dagster layer is first imported.
    return subprocess.run([sys.executable, "-c", "from eval_assets.cli import main; main()",
                           *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_a_malformed_models_file_is_a_short_error(tmp_path: Path, sample_db: Path) -> None:
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - name: broken\n    serve: random\n    temperature: hot\n")
    env = {"EVAL_ASSETS_MODELS": str(models)}

    ran = _cli(["run", str(sample_db), "--storage-root", str(tmp_path / "out")], env)
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr
    assert str(models) in ran.stderr and "models[0]" in ran.stderr
    assert "'temperature'" in ran.stderr

    dataset = tmp_path / "dataset"
    dataset.mkdir()
    vqa = _cli(["vqa", "run", str(dataset), "--model", "broken"], env)
    assert vqa.returncode == 2 and "Traceback" not in vqa.stderr
    assert str(models) in vqa.stderr

    debug = _cli(["run", str(sample_db), "--debug"], env)
    assert debug.returncode == 2 and "Traceback" in debug.stderr
