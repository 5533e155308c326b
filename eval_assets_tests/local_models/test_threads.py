"""The local models' thread count: from the usable cores less the load, once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eval_assets.local_models.threads import (
    THREADS_ENV,
    choose_threads,
    load_of_others,
    own_load,
    usable_cpus,
)


@pytest.mark.parametrize(("cpus", "load", "threads"), [
    (2, 0.0, 2), (2, 0.4, 2), (2, 1.0, 1), (2, 2.5, 1), (2, 9.0, 1),
    (8, 2.2, 6), (8, 0.0, 8), (8, 30.0, 1), (4, None, 4), (4, float("nan"), 4)])
def test_a_loaded_machine_gets_fewer_threads(cpus: int, load: float | None,
                                             threads: int) -> None:
    assert choose_threads(cpus, load) == threads


def test_the_environment_variable_forces_the_count() -> None:
    assert choose_threads(2, 9.0, "3") == 3
    with pytest.raises(ValueError, match=THREADS_ENV):
        choose_threads(2, 0.0, "zero")


def test_the_process_own_load_is_not_counted_as_other_work() -> None:
    # A machine going idle as the demo saw it when SmolLM2 loaded: 0.6, of which its own busy
    # first 20 s are 0.28.
    assert choose_threads(2, load_of_others(0.6, 0.28)) == 2
    assert choose_threads(2, 0.6) == 1  # what it chose before
    # Two CPU-bound processes beside it still leave it one thread.
    assert choose_threads(2, load_of_others(2.3, 0.28)) == 1
    assert load_of_others(0.1, 0.5) == 0.0
    assert load_of_others(None, 0.5) is None


_BUSY = """
import time
from eval_assets.local_models.threads import own_load
began = time.process_time()
while time.process_time() - began < 3:
    pass
print(own_load())
"""


def test_a_busy_process_estimates_its_own_part_of_the_load() -> None:
    # 3 s of CPU in ~3 s of life: share ~1 x (1 - e^(-3/60)) ~ 0.05; an idle one would be ~0.
    done = subprocess.run([sys.executable, "-c", _BUSY], capture_output=True, text=True,
                          check=True)
    assert 0.01 < float(done.stdout) < 0.2, done.stdout
    assert 0.0 <= own_load() < 1.0


def test_usable_cpus_follows_the_affinity_mask() -> None:
    assert usable_cpus() == len(os.sched_getaffinity(0))


_PROBE = """
import torch
from eval_assets.local_models.threads import configure_torch_threads
first = configure_torch_threads(torch)
torch.set_num_threads(5)  # what someone else does later must not make us decide again
second = configure_torch_threads(torch)
print(first, second)
"""


def test_torch_threads_are_set_once_per_process() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          check=True, env={**os.environ, THREADS_ENV: "1"})
    assert done.stdout.split() == ["1", "1"]


@pytest.mark.slow
def test_smollm2_runs_with_the_chosen_threads() -> None:
    probe = ("import torch\nfrom eval_assets.local_models.smollm2 import BlindSmolLM2\n"
             "BlindSmolLM2()\nprint(torch.get_num_threads())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, env={**os.environ, THREADS_ENV: "1"})
    assert done.stdout.split()[-1] == "1"
