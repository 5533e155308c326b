"""How many CPU threads the local models (SmolLM2, the sentence-transformers embedder) use.

torch's default is one intra-op thread per core. On a machine with other work running those
threads wait for each other at every operation (a spin-and-barrier pool): at a load of 7 on 2
cores one 60-token SmolLM2 forward pass took 0.95 s with 1 thread and 4.8-11 s with torch's 2.
So the count is chosen from the cores this process may use (``os.sched_getaffinity``) less the
load of other work (``os.getloadavg``, 1-minute, less this process's own part), at least 1: a
loaded machine gets 1 thread, a quiet one all its cores. ``EVAL_ASSETS_THREADS=N`` forces N.

It is decided once per process, when the first local model loads (:func:`configure_torch_threads`,
the one place that sets it), because torch's thread pool is sized once: changing it while other
threads run inference is unsafe. ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are not set: they only
act when a process starts, and torch's pool (which the two models use for all their arithmetic)
is set here directly.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

THREADS_ENV = "EVAL_ASSETS_THREADS"

_lock = threading.Lock()
_chosen: int | None = None


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, e.g. a container's cpuset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def choose_threads(cpus: int, load: float | None, forced: str | None = None) -> int:
    """Threads for ``cpus`` usable cores at a 1-minute ``load`` (None: unknown).

    ``forced`` (the ``EVAL_ASSETS_THREADS`` value) wins when it is a positive integer. Otherwise
    the cores left idle by the load, rounded, at least 1 and at most ``cpus``: at load 0.3 on 2
    cores, 2 threads; at load 1 or more, 1.
    """
    if forced:
        try:
            value = int(forced)
        except ValueError:
            value = 0
        if value >= 1:
            return value
        raise ValueError(f"{THREADS_ENV}={forced!r}: it must be a positive integer (threads "
                         f"of the local models); fix or unset it")
    if load is None or not math.isfinite(load):
        return cpus
    return max(1, min(cpus, round(cpus - load)))


def current_load() -> float | None:
    """The 1-minute load average, None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def own_load() -> float:
    """This process's own part of the 1-minute load average, estimated (0 where unknown).

    The load average counts the process asking, too: the demo loads SmolLM2 some 20 s after it
    starts, busy on one core all along, so on a machine going idle it saw a load of 0.6 (0.28 of
    it its own) and chose 1 thread. The estimate: its mean CPU use since it started (cores),
    weighted as the kernel's exponential 1-minute average weighs a process that has run that
    long, share x (1 - e^(-t/60)).
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            # Fields after the command name (which may hold spaces); starttime is field 22.
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as uptime:
            elapsed = float(uptime.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):  # not Linux
        return 0.0
    if elapsed <= 0:
        return 0.0
    times = os.times()
    return (times.user + times.system) / elapsed * (1 - math.exp(-elapsed / 60))


def load_of_others(load: float | None, own: float) -> float | None:
    """The load less this process's own part, at least 0 (None stays None)."""
    if load is None or not math.isfinite(load):
        return load
    return max(0.0, load - own)


def configure_torch_threads(torch: Any) -> int:
    """Set torch's intra-op thread count for this process once (later calls keep it); the
    count set."""
    global _chosen
    with _lock:
        if _chosen is None:
            others = load_of_others(current_load(), own_load())
            _chosen = choose_threads(usable_cpus(), others, os.environ.get(THREADS_ENV))
            torch.set_num_threads(_chosen)
        return _chosen
