"""What a score was computed from: the answers' fingerprint ignores timings, not answers."""

from __future__ import annotations

import json
from pathlib import Path

from eval_assets.layout import RUN_ANSWERS
from eval_assets.schemas.results import ScoredInputs
from eval_assets.scoring.provenance import predictions_fingerprint, stale_reason


def _answers(run_dir: Path, reply: str, latency: float) -> str:
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"case_id": "c0", "status": "success", "raw_response": reply,
              "latency_s": latency, "wall_s": latency + 0.01, "attempts": 1}
    (run_dir / RUN_ANSWERS).write_text(json.dumps(record) + "\n")
    return predictions_fingerprint(run_dir)


def test_the_same_answers_at_other_speeds_are_the_same_answers(tmp_path: Path) -> None:
    first = _answers(tmp_path / "a", "yes", 0.12)
    assert _answers(tmp_path / "b", "yes", 3.4) == first
    assert _answers(tmp_path / "c", "no", 0.12) != first
    assert predictions_fingerprint(tmp_path / "none") != first


def test_a_stale_cell_says_what_changed() -> None:
    scored = ScoredInputs(dataset_sha256="d", predictions_sha256="p", overrides_sha256=None)
    assert stale_reason(scored, scored) is None
    changed = scored.model_copy(update={"predictions_sha256": "q", "overrides_sha256": "o"})
    assert stale_reason(scored, changed) == (
        "scored on other answers, label overrides; pending recomputation")
    assert "before its inputs were recorded" in str(stale_reason(None, scored))
