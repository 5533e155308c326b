"""An event log that also records what each run worker spends outside its steps' own work.

A run launched by the daemon is a process of its own: it starts Python, imports Dagster and the
code location, opens the instance, plans the run and writes its events, then runs its steps. This
storage (the project's :class:`~eval_assets.defs.event_log_storage.SqliteEventLogWithoutStatusCache`
plus a few counters) sees every event the worker stores, in the worker's process: it adds up the
CPU the process spends between each step's STEP_START and its end, and when the run ends appends
one line to ``<instance root>/run_cpu.jsonl``::

    {"run_id": ..., "pid": ..., "cpu_s": 3.1, "step_cpu_s": 0.4, "steps": 2}

``cpu_s`` is the process's CPU (user + system, all threads) from its start to its run's end;
``cpu_s - step_cpu_s`` is the cost a run pays outside its cells' work. Only for measuring
(``benchmarks/graph_scale_daemon.py`` names it in its instance's ``dagster.yaml``):
:data:`RUN_CPU_EVENT_LOG_YAML`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance
from dagster._core.events.log import EventLogEntry

from eval_assets.defs.event_log_storage import SqliteEventLogWithoutStatusCache

RUN_CPU_FILE = "run_cpu.jsonl"
RUN_CPU_EVENT_LOG_YAML = """\
event_log_storage:
  module: eval_assets.defs.run_cpu
  class: SqliteEventLogRecordingRunCpu
"""
_STEP_END = {DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE,
             DagsterEventType.STEP_SKIPPED}
_RUN_END = {DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE,
            DagsterEventType.RUN_CANCELED}


class SqliteEventLogRecordingRunCpu(SqliteEventLogWithoutStatusCache):
    """The project's event log, plus one line per run in ``run_cpu.jsonl`` (see the module)."""

    _root: str | None = None

    def register_instance(self, instance: DagsterInstance) -> None:
        self._root = instance.root_directory
        self._step_started: dict[tuple[str, str], float] = {}
        self._step_cpu: dict[str, list[float]] = {}
        super().register_instance(instance)

    def store_event(self, event: EventLogEntry) -> None:
        super().store_event(event)
        dagster_event = event.dagster_event
        if dagster_event is None or self._root is None:
            return
        kind, run_id, step = dagster_event.event_type, event.run_id, dagster_event.step_key
        now = time.process_time()
        if kind == DagsterEventType.STEP_START and step:
            self._step_started[(run_id, step)] = now
        elif kind in _STEP_END and (run_id, step) in self._step_started:
            spent = self._step_cpu.setdefault(run_id, [0.0, 0])
            spent[0] += now - self._step_started.pop((run_id, step or ""))
            spent[1] += 1
        elif kind in _RUN_END and run_id in self._step_cpu:
            # Only the process that ran the steps writes (the daemon stores other runs' ends).
            step_cpu, steps = self._step_cpu.pop(run_id)
            line = json.dumps({"run_id": run_id, "pid": os.getpid(), "cpu_s": round(now, 3),
                               "step_cpu_s": round(step_cpu, 3), "steps": steps})
            with (Path(self._root) / RUN_CPU_FILE).open("a") as out:
                out.write(line + "\n")  # one short write per line: O_APPEND keeps them whole
