"""``--cpu-report=N`` ranks tests by the CPU they used, their waited subprocesses' included, and
not by the time they waited."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TESTS = '''
import subprocess, sys, time

def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_burns():
    _burn(0.6)

def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c",
                    "import time\\nend = time.process_time() + 0.6\\n"
                    "while time.process_time() < end: pass"], check=True)

def test_waits():
    time.sleep(0.6)
'''


def test_the_report_ranks_by_cpu_with_children_and_not_by_waiting(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "eval_assets_tests.cpu_report", "--cpu-report=3", "--rootdir", str(tmp_path),
         "-c", "/dev/null", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = re.findall(r"^\s*(\d+\.\d)s cpu  \S*::(\w+)$", done.stdout, re.MULTILINE)
    cpu = {name: float(seconds) for seconds, name in rows}
    assert set(cpu) == {"test_burns", "test_burns_in_a_child", "test_waits"}, done.stdout
    assert cpu["test_burns"] >= 0.5 and cpu["test_burns_in_a_child"] >= 0.5, cpu
    assert cpu["test_waits"] < 0.3, cpu
    assert "most CPU: 3 of 3 tests" in done.stdout
