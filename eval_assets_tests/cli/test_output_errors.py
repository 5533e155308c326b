"""A full disk or an unwritable output: the error names the path and the cause, and a rerun
continues where the failed one stopped.

The real cases run in a user namespace (``unshare -rm``, no privilege needed beyond what the
kernel allows unprivileged users): a 48 KiB tmpfs is a real full disk (ENOSPC), a read-only bind
mount a real read-only output (EROFS; ``chmod`` refuses nothing to root, and tests may run as
root). Where user namespaces are not available they are skipped with that reason. One test
simulates ENOSPC by making ``os.fsync`` fail (a full disk cannot be made in-process): fsync is
where the journal's and the atomic writes' data reaches the disk, and it does report ENOSPC on
delayed-allocation and network file systems.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.atomic import write_text_atomic
from eval_assets.cli import app
from eval_assets.output_errors import not_a_folder, output_problem
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, make_dataset

runner = CliRunner()
EXE = Path(sys.executable).parent / "eval-assets"


def _userns_mounts() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, check=False)
    return probe.returncode == 0


needs_userns = pytest.mark.skipif(not _userns_mounts(),
                                  reason="unshare -rm cannot mount here (no user namespaces)")


def _in_namespace(script: str, cwd: Path) -> str:
    """Run ``script`` (sh) in a fresh user and mount namespace; its output, stdout+stderr."""
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False, cwd=cwd,
                          env={**os.environ, "COLUMNS": "300"}, timeout=300)
    return done.stdout


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
@needs_userns
def test_a_full_disk_names_the_path_and_a_rerun_continues(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=20, cases_per_frame=5)
    out = tmp_path / "out"
    out.mkdir()
    run = ["vqa", "run", str(dataset.root), "--model", "random", "--output", str(out / "run")]
    command = " ".join([str(EXE), *run])
    output = _in_namespace(
        f"mount -t tmpfs -o size=48k tmpfs {out} && {command}; echo rc=$?; "
        f"mount -o remount,size=8m {out} && {command}; echo rc=$?", tmp_path)
    first, _, second = output.partition("rc=")
    flat = _flat(first)
    assert output.count("rc=") == 2 and output.split("rc=")[1].startswith("1"), output
    assert f"cannot write {out / 'run'}" in flat and "the disk is full (ENOSPC" in flat, output
    assert "free space on the disk holding" in flat and "rerun the same command" in flat
    assert "Traceback" not in output
    # Nothing finished was lost: the rerun resumes the journalled calls and completes.
    assert "rc=0" in output and "100/100 cases answered" in second, output
    resumed = int(second.split(" resumed")[0].rsplit(" ", 1)[1])
    assert resumed > 0


@pytest.mark.slow
@needs_userns
def test_a_read_only_output_names_the_path_and_the_cause(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "out"
    out.mkdir()
    command = " ".join([str(EXE), "vqa", "run", str(dataset.root), "--model", "random",
                        "--output", str(out / "run")])
    output = _in_namespace(f"mount --bind -o ro {out} {out} && {command}; echo rc=$?",
                           tmp_path)
    flat = _flat(output)
    assert "rc=1" in output and f"{out / 'run'}" in flat, output
    assert "read-only (EROFS" in flat and "write elsewhere" in flat, output


@needs_userns
def test_a_full_sqlite_database_is_worded_with_its_folder(tmp_path: Path) -> None:
    # SQLite's own words for a full disk, from a real database on a full tmpfs.
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (
        "import os, sqlite3, sys\n"
        "from eval_assets.output_errors import output_problem\n"
        f"os.environ['DAGSTER_HOME'] = {str(mnt)!r}\n"
        f"db = sqlite3.connect({str(mnt / 'runs.db')!r})\n"
        "db.execute('create table t (x blob)')\n"
        "try:\n"
        "    for _ in range(100):\n"
        "        db.execute('insert into t values (?)', (os.urandom(8192),)); db.commit()\n"
        "except sqlite3.OperationalError as exc:\n"
        "    print('caught', exc); print(output_problem(exc))\n")
    (tmp_path / "fill.py").write_text(script)
    output = _in_namespace(f"mount -t tmpfs -o size=64k tmpfs {mnt} && "
                           f"{sys.executable} {tmp_path / 'fill.py'}", tmp_path)
    assert "caught database or disk is full" in output, output
    # Not through SQLAlchemy, so not Dagster's storage: the disk named is the fullest, measured.
    assert "cannot write an SQLite database the error does not name" in output, output
    assert f"of the disks written to the fullest holds {mnt}" in output, output


@needs_userns
def test_a_recording_written_to_a_full_disk_names_that_disk(tmp_path: Path) -> None:
    # Before: "cannot write the SQLite database under <cwd> (the Dagster instance) ... (80041.3
    # MB free there now)": another disk, and no Dagster involved.
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    output = _in_namespace(f"mount -t tmpfs -o size=200k tmpfs {mnt} && {EXE} recording "
                           f"synthesize {mnt / 'x.db'} --frames 3; echo rc=$?", tmp_path)
    flat = _flat(output)
    assert "rc=1" in flat and "Traceback" not in flat, output
    assert f"cannot write {mnt / 'x.db'}: the disk is full (ENOSPC: database or disk is full)" \
        in flat, output
    assert f"free space on the disk holding {mnt / 'x.db'}" in flat
    assert "Dagster" not in flat
    assert not list(mnt.glob("x.db*"))  # nothing half-written is left


@needs_userns
def test_an_error_naming_no_file_names_the_fullest_disk_written_to(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = ("import errno\n"
              "from eval_assets.output_errors import output_problem\n"
              "print(output_problem(OSError(errno.ENOSPC, 'No space left on device')))\n")
    (tmp_path / "nameless.py").write_text(script)
    output = _in_namespace(f"mount -t tmpfs -o size=64k tmpfs {mnt} && TMPDIR={mnt} "
                           f"{sys.executable} {tmp_path / 'nameless.py'}", tmp_path)
    flat = _flat(output)
    assert "the error names no file, and of the disks written to the fullest holds " \
        f"{mnt}" in flat, output
    assert f"free space on the disk holding {mnt}" in flat


def test_a_wrapped_sqlite_disk_io_error_is_found(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy.exc import OperationalError

    wrapped = OperationalError("INSERT INTO event_logs ...", {}, sqlite3.OperationalError(
        "disk I/O error"))
    try:
        try:
            raise wrapped
        except OperationalError as exc:
            raise RuntimeError("storage failed") from exc
    except RuntimeError as outer:
        caught = outer
    message = output_problem(caught)
    assert message is not None and "disk I/O error" in message
    assert output_problem(ValueError("no")) is None
    # Through SQLAlchemy with an instance folder set: Dagster's storage, named as such.
    home = str(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", home)
    message = output_problem(caught)
    assert message is not None
    assert f"cannot write the SQLite database under {home} (the Dagster instance)" in message


def _fsync_fails_after(monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    """``os.fsync`` reports a full disk (ENOSPC) from its ``calls + 1``-th call on."""
    real = os.fsync
    count = {"n": 0}

    def fsync(fd: int) -> None:
        count["n"] += 1
        if count["n"] > calls:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_an_atomic_write_on_a_full_disk_names_its_path_and_keeps_the_old_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")
    _fsync_fails_after(monkeypatch, 0)
    with pytest.raises(OSError) as raised:
        write_text_atomic(target, "new")
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(target)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == [
        "summary.json"]


def test_a_simulated_full_disk_mid_run_names_the_journal_and_a_rerun_continues(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=4, cases_per_frame=3)
    args = ["vqa", "run", str(dataset.root), "--model", "random", "--output",
            str(tmp_path / "run"), "--max-concurrency", "1", *ONE_CALL_PER_CASE]
    with monkeypatch.context() as patch:
        # Each answer syncs its usage line and its journal line: a few are answered first.
        _fsync_fails_after(patch, 16)
        failed = runner.invoke(app, args)
    flat = _flat(failed.output)
    assert failed.exit_code == 1, failed.output
    # The file whose write failed: the answers' journal or the calls' usage ledger beside it
    # (each call's usage line is written and synced as the call ends, before its answer).
    assert "cannot write" in flat and "ENOSPC" in flat, flat
    assert ".journal.jsonl" in flat or "usage.jsonl" in flat, flat
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "12/12 cases answered" in again.output and " 0 resumed" not in again.output


def test_an_over_long_image_name_is_bad_input_naming_the_case(tmp_path: Path) -> None:
    # Before: exit 1 with "OSError: [Errno 36] File name too long" from Path.is_file().
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=1)
    cases_file = dataset.root / "cases.jsonl"
    lines = cases_file.read_text().splitlines()
    first = json.loads(lines[0])
    first["image"] = "assets/" + "long-name-" * 30 + ".png"  # 304 bytes: over ext4's 255
    cases_file.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    result = runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "random",
                                 "--output", str(tmp_path / "run")])
    flat = _flat(result.output)
    assert result.exit_code == 2, flat
    assert f"{cases_file}:1: field 'image' names an image no file system here can hold" in flat
    assert "is 304 bytes, longer than the 255 bytes a file or folder name may have" in flat
    assert "fix: rename the asset and the case's 'image' to a shorter name" in flat
    assert "Errno 36" not in flat and "Traceback" not in flat


def test_a_real_too_long_name_error_names_the_part_and_the_limit(tmp_path: Path) -> None:
    target = tmp_path / ("x" * 300) / "out.json"
    with pytest.raises(OSError) as refused:
        write_text_atomic(target, "{}")
    assert refused.value.errno == errno.ENAMETOOLONG
    message = output_problem(refused.value)
    assert message is not None and message.startswith(f"cannot use {tmp_path / ('x' * 300)}")
    assert f": the name '{'x' * 24}…{'x' * 12}' is 300 bytes, longer than the 255 bytes" \
        in message
    assert "(ENAMETOOLONG); fix: shorten that name" in message


@needs_userns
def test_vqa_generate_on_a_full_output_disk_names_that_disk(tmp_path: Path) -> None:
    # Before: "of the disks written to the fullest holds <cwd>; ... (67536.6 MB free there now)":
    # the error (a buffered write's flush) names no file, and --output was not measured.
    subprocess.run([str(EXE), "recording", "synthesize", str(tmp_path / "x.db"), "--frames",
                    "3"], check=True, capture_output=True, cwd=tmp_path, timeout=300)
    out = tmp_path / "out"
    out.mkdir()
    output = _in_namespace(f"mount -t tmpfs -o size=100k tmpfs {out} && {EXE} vqa generate "
                           f"{tmp_path / 'x.db'} --output {out / 'ds'}; echo rc=$?", tmp_path)
    flat = _flat(output)
    assert "rc=1" in flat and "Traceback" not in flat, output
    assert "the disk is full (ENOSPC" in flat, output
    assert f"the fullest holds {out / 'ds'}; fix: free space on the disk holding {out / 'ds'}" \
        in flat, output
    assert not list(out.iterdir())  # nothing half-written is left


def test_a_full_disk_met_by_a_copy_names_the_file_written_not_its_source() -> None:
    # shutil.copyfile's ENOSPC names the source first (filename) and the target second.
    refused = OSError(errno.ENOSPC, "No space left on device", "/tmp/work/frame.png", None,
                      "/mnt/small/ds/assets/frame.png")
    message = output_problem(refused)
    assert message is not None
    assert message.startswith("cannot write /mnt/small/ds/assets/frame.png: the disk is full")
    assert "/tmp/work" not in message


def test_eval_assets_home_naming_a_file_is_bad_input_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: "error: [Errno 20] Not a directory: '<file>/dagster_home'", exit 2.
    subprocess.run([str(EXE), "recording", "synthesize", str(tmp_path / "x.db"), "--frames",
                    "2"], check=True, capture_output=True, cwd=tmp_path, timeout=300)
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("EVAL_ASSETS_HOME", str(home))
    result = runner.invoke(app, ["run", str(tmp_path / "x.db"), "--model", "random"])
    flat = _flat(result.output)
    assert result.exit_code == 2, flat
    assert f"EVAL_ASSETS_HOME={home} names a file, not a folder ({home} is a file)" in flat
    assert "Fix: point EVAL_ASSETS_HOME at a folder" in flat and "--storage-root" in flat
    assert "Errno 20" not in flat and home.read_text() == "not a folder"


def test_an_output_path_through_a_file_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    with pytest.raises(OSError) as refused:
        (blocker / "run").mkdir(parents=True)
    message = not_a_folder(refused.value)
    assert message == (f"cannot make {blocker / 'run'}: {blocker} is a file, not a folder. "
                       "Fix: give a folder path (absent or a folder) for the output, or move "
                       "that file away")
    assert not_a_folder(OSError(errno.ENOSPC, "full")) is None
