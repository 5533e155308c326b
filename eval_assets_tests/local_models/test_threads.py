"""The local models' thread count: from the usable cores less the load, once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eval_assets.local_models.threads import THREADS_ENV, choose_threads, usable_cpus


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
