"""Runs of the local engines lower their CPU priority, so the daemon keeps its share of the CPU.

Each case runs in a fresh Python process (niceness can only go up: the test process must keep
its own), executes a one-op job with the code location's executor through Dagster's
``execute_job`` (the executor a launched run uses, unlike ``execute_in_process``), and reads the
niceness the op saw.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_assets.defs.executors import RUN_NICENESS_ENV, run_niceness

PROBE = '''
import os
import sys

from dagster import DagsterInstance, execute_job, job, op, reconstructable

from eval_assets.defs.executors import executor_from_env


@op
def niceness() -> int:
    return os.nice(0)


@job(executor_def=executor_from_env())
def probe():
    niceness()


if __name__ == "__main__":
    before = os.nice(0)
    os.makedirs(sys.argv[1], exist_ok=True)
    with DagsterInstance.local_temp(sys.argv[1]) as instance:
        with execute_job(reconstructable(probe), instance=instance) as result:
            assert result.success
            print(before, result.output_for_node("niceness"))
'''

pytestmark = pytest.mark.skipif(not hasattr(os, "nice"), reason="no os.nice on this platform")


def _niceness_seen(tmp_path: Path, **env: str) -> tuple[int, int]:
    script = tmp_path / "probe_job.py"
    script.write_text(PROBE)
    environ = {k: v for k, v in os.environ.items() if k != RUN_NICENESS_ENV}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "instance")],
                          env={**environ, **env}, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    before, seen = done.stdout.split()[-2:]
    return int(before), int(seen)


@pytest.mark.parametrize("executor", ["in_process", "multiprocess"])
def test_a_run_takes_the_default_niceness(tmp_path: Path, executor: str) -> None:
    if os.nice(0) >= 10:
        pytest.skip("the tests already run at niceness 10 or more: a run cannot show a change")
    before, seen = _niceness_seen(tmp_path, EVAL_ASSETS_EXECUTOR=executor)
    assert (before, seen) == (os.nice(0), 10)


def test_the_niceness_is_configurable_and_zero_leaves_it(tmp_path: Path) -> None:
    before, seen = _niceness_seen(tmp_path, **{RUN_NICENESS_ENV: "0"})
    assert seen == before
    target = min(19, before + 3)
    if target == before:
        pytest.skip("the tests run at niceness 19: a run cannot show a change")
    before, seen = _niceness_seen(tmp_path, **{RUN_NICENESS_ENV: str(target)})
    assert seen == target


@pytest.mark.parametrize("raw", ["ten", "-5", "20"])
def test_a_bad_niceness_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(RUN_NICENESS_ENV, raw)
    with pytest.raises(ValueError, match=r"EVAL_ASSETS_RUN_NICENESS.*from 0 .* to 19"):
        run_niceness()
