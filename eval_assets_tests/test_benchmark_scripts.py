"""Every performance script in ``benchmarks/`` still runs: its ``--smoke`` mode, in seconds.

Nothing else runs these scripts, so without this test a renamed function or a new required field
breaks them unnoticed (``vision_similarity.py`` did, for weeks). The smoke modes use tiny sizes
and judge no performance target: they check that the script runs end to end.

Each smoke is a fresh interpreter that imports Dagster, torch or a code location: the ten of them
took 92 s of wall and 53 s of CPU on the quiet 2-core machine (``/usr/bin/time`` per script), a
third of the fast lane on a busy one, so they are ``slow`` (``make test``), not in the fast lane.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))


def _extra_args(script: Path, tmp_path: Path) -> list[str]:
    # Outputs that would otherwise go to the user's cache or a temporary folder left behind.
    return {"recording_scale.py": ["--cache", str(tmp_path / "cache")],
            "synth_rig.py": ["--out", str(tmp_path / "out")]}.get(script.name, [])


def test_every_script_is_covered() -> None:
    """A new script is picked up here; an empty folder would make the smoke test vacuous."""
    assert [s.name for s in SCRIPTS], "no benchmark script found"


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_smoke_mode_runs(script: Path, tmp_path: Path) -> None:
    """``python benchmarks/<script> --smoke`` exits 0 (in a scratch folder, offline)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "DAGSTER_DISABLE_TELEMETRY": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(script), "--smoke", *_extra_args(script, tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=230,
                          check=False)
    assert proc.returncode == 0, (
        f"{script.name} --smoke exited {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n"
        f"--- stderr\n{proc.stderr[-5000:]}")
