"""The resume journal: durable appends, torn-tail repair, success precedence, the run lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.model_runs.store import answer_key
from eval_assets.schemas.predictions import AnswerRecord


def rec(case_id: str, status: str = "success", choice: str | None = "yes",
        config_hash: str = "h1", content: str = "c1") -> AnswerRecord:
    failed = status == "failed"
    return AnswerRecord(case_id=case_id, model="m", config_hash=config_hash, status=status,
                        raw_response=None if failed else choice, choice=None if failed else choice,
                        extraction_tier=None if failed else "exact", attempts=1,
                        error_category="server_error" if failed else None,
                        error_message="HTTP 500" if failed else None, content_sha256=content)


def open_journal(path: Path) -> Journal[AnswerRecord]:
    return Journal(path, AnswerRecord, answer_key)


def test_appended_records_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.append(rec("a"))
        journal.append(rec("b", "failed"))
    with open_journal(path) as journal:
        assert journal.succeeded(("a", "m", "h1", "c1"))
        assert not journal.succeeded(("b", "m", "h1", "c1"))
        assert journal.get(("b", "m", "h1", "c1")).error_category == "server_error"
        assert not journal.succeeded(("a", "m", "other-hash", "c1"))
        # Same case id, model and config, other model-facing content: not the same answer.
        assert not journal.succeeded(("a", "m", "h1", "other-content"))
    assert len(path.read_text().splitlines()) == 2


def test_first_success_stands_and_failures_give_way(tmp_path: Path) -> None:
    with open_journal(tmp_path / "j.jsonl") as journal:
        journal.append(rec("a", "failed"))
        journal.append(rec("a", choice="no"))
        journal.append(rec("a", "failed"))
        journal.append(rec("a", choice="yes"))
        standing = journal.get(("a", "m", "h1", "c1"))
    assert standing.status == "success" and standing.choice == "no"


def test_torn_last_line_is_dropped_and_appending_continues_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with open_journal(path) as journal:
        journal.append(rec("a"))
    line_b = rec("b").model_dump_json()
    with open(path, "a") as fh:
        fh.write(line_b[: len(line_b) // 2])  # a write cut short by a kill
    with open_journal(path) as journal:
        assert journal.dropped_torn_line
        assert journal.succeeded(("a", "m", "h1", "c1"))
        assert journal.get(("b", "m", "h1", "c1")) is None
        journal.append(rec("c"))
    with open_journal(path) as journal:
        assert not journal.dropped_torn_line
        assert [r.case_id for r in journal.records()] == ["a", "c"]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(rec("a").model_dump_json())
    with open_journal(path) as journal:
        assert not journal.dropped_torn_line and journal.succeeded(("a", "m", "h1", "c1"))
        journal.append(rec("b"))
    assert [line[:14] for line in path.read_text().splitlines()] == ['{"model":"m","'] * 2


def test_corrupt_line_in_the_middle_names_file_line_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(rec("a").model_dump_json() + "\n{garbage\n" + rec("b").model_dump_json()
                    + "\n")
    with pytest.raises(ValueError, match=r"j\.jsonl:2 is not a valid AnswerRecord.*delete that"):
        open_journal(path)


def test_run_lock_is_exclusive(tmp_path: Path) -> None:
    lock = tmp_path / "run" / ".run.lock"
    held = exclusive_run_lock(lock)
    held.__enter__()
    try:
        with pytest.raises(RuntimeError, match="being written by another run"), \
                exclusive_run_lock(lock):
            pass
    finally:
        held.__exit__(None, None, None)
    with exclusive_run_lock(lock):
        pass
