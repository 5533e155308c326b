"""Recording names are one partition whatever their Unicode form: keys in NFC, and two files
whose names normalise alike ("café.db" written precomposed and decomposed) are refused, both named
so that they can be told apart."""

from __future__ import annotations

import os
import time
import unicodedata
from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.layout import partition_key_for
from eval_assets_tests.factories import make_recording

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")


def _recording(path: Path) -> Path:
    make_recording(path, n_frames=3, width=160, height=120)
    old = time.time() - 3600  # settled: taken at the first look
    os.utime(path, (old, old))
    return path


def _tick(tmp_path: Path, recordings: Path) -> tuple[list[list[str]], str]:
    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    resources = {"storage": storage,
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    with DagsterInstance.ephemeral() as instance:
        data = recordings_sensor.evaluate_tick(
            build_sensor_context(instance=instance, resources=resources))
    return ([list(r.partition_keys) for r in data.dynamic_partitions_requests or []],
            data.skip_message or "")


def test_keys_are_nfc_and_find_their_file_in_either_form(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    assert NFC != NFD and partition_key_for(Path(f"{NFD}.db")) == NFC
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    written = _recording(recordings / f"{NFD}.db")  # as macOS would have named it
    registered, _ = _tick(tmp_path, recordings)
    assert registered == [[NFC]]
    storage = ProjectStorage(recordings_dir=str(recordings))
    assert storage.recording_file(NFC) == written


def test_two_files_that_normalise_alike_are_refused_both_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    _recording(recordings / f"{NFC}.db")
    _recording(recordings / f"{NFD}.db")
    _recording(recordings / "fine.db")
    registered, reason = _tick(tmp_path, recordings)
    assert registered == [["fine"]], reason
    assert "refused 2 recording(s)" in reason
    # Printed plainly the two names look the same; the escapes tell them apart.
    assert "'caf\\xe9.db'" in reason and "'cafe\\u0301.db'" in reason
    assert "same name once Unicode-normalised (NFC)" in reason and "rename or remove" in reason


def test_run_refuses_a_recording_with_a_look_alike_beside_it(tmp_path: Path) -> None:
    nfc = _recording(tmp_path / f"{NFC}.db")
    _recording(tmp_path / f"{NFD}.db")
    result = CliRunner().invoke(app, ["run", str(nfc), "--storage-root", str(tmp_path / "out"),
                                      "--model", "random"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "'caf\\xe9.db'" in text and "'cafe\\u0301.db'" in text, text
    assert "Traceback" not in result.output
