"""Runs started from a warm worker: the code location imported once, each run a fork of it.

Dagster's default run launcher asks the code server to start each run in a fresh interpreter
(``multiprocessing`` "spawn"), which imports Dagster and the code location again before the run's
first step: about 2 s of CPU per run, more than a cell's own work when the models answer at once
(``benchmarks/graph_scale_daemon.py`` prints it per run). With one run per cell, a night over a
fleet paid it hundreds of times.

:class:`WarmRunLauncher` (named in the project's ``dagster.yaml``,
:data:`eval_assets.defs.local.instance.WARM_RUN_LAUNCHER_YAML`) keeps one worker process per
code location: it imports the location's module and builds its definitions once, then waits for
run ids on its stdin; for each it forks, and the child executes the run as Dagster's own run
worker does (``core_execute_run`` on the instance from its ref), writing its events to the
instance. The worker has no thread and opens no instance or database before it forks, so a fork
starts clean.

- **The code a run executes** is the code location's: the worker is keyed by the location's
  server id, which a reload (UI "Reload", a restarted code server) changes; the next launch then
  starts a new worker, and the old one exits once its runs are done.
- **Environment**: a run inherits the launching process's environment (the daemon's), not the
  code server's; the deployment recipe gives all of them one environment.
- **Fallback**: a run whose job has no Python origin (a location not served from Python here),
  or a worker that cannot start, is launched by Dagster's default launcher.
- **Termination** (the UI's "Terminate"): SIGINT to the run's process (its pid in the
  :data:`PID_TAG` tag), which Dagster turns into a canceled run.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from dagster import DagsterRun
from dagster._core.launcher import LaunchRunContext
from dagster._core.launcher.default_run_launcher import DefaultRunLauncher
from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin
from dagster._serdes import ConfigurableClassData, deserialize_value, serialize_value

PID_TAG = "eval_assets/run_pid"


class _Worker:
    """One warm worker process and the pipe to it (one launch at a time)."""

    def __init__(self, origin: RepositoryPythonOrigin) -> None:
        self.process = subprocess.Popen(
            [origin.executable_path, "-m", __name__, serialize_value(origin)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=getattr(origin.code_pointer, "working_directory", None) or None)
        self.lock = threading.Lock()
        self.ready = self._read()  # {"ready": true} once the code is loaded, or an error

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the warm run worker exited (code {self.process.wait()})")
        return json.loads(line)

    def start(self, run_id: str, instance_ref: str) -> int:
        """Fork a run of ``run_id``; its pid."""
        assert self.process.stdin is not None
        with self.lock:
            self.process.stdin.write(json.dumps({"run_id": run_id, "ref": instance_ref}) + "\n")
            self.process.stdin.flush()
            answer = self._read()
        if "pid" not in answer:
            raise RuntimeError(answer.get("error", answer))
        return int(answer["pid"])

    def close(self) -> None:
        """No more runs: the worker exits once its running runs are done."""
        if self.process.stdin is not None:
            self.process.stdin.close()


class WarmRunLauncher(DefaultRunLauncher):
    """Dagster's default run launcher, except that runs fork from a warm worker (the module)."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(inst_data=inst_data)
        self._workers: dict[str, tuple[str, _Worker]] = {}
        self._workers_lock = threading.Lock()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
                          ) -> WarmRunLauncher:
        return cls(inst_data=inst_data)

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        origin = run.job_code_origin
        worker = self._worker(context, run, origin)
        if worker is None or origin is None:
            super().launch_run(context)
            return
        try:
            pid = worker.start(run.run_id, serialize_value(self._instance.get_ref()))
        except (OSError, RuntimeError, ValueError) as exc:  # the worker died: a new one next time
            self._instance.report_engine_event(
                f"warm run worker failed ({exc}); Dagster's launcher starts the run", run,
                cls=self.__class__)
            super().launch_run(context)
            return
        self._instance.add_run_tags(run.run_id, {PID_TAG: str(pid)})
        self._run_ids.add(run.run_id)

    def _worker(self, context: LaunchRunContext, run: DagsterRun,
                origin: JobPythonOrigin | None) -> _Worker | None:
        """The warm worker of the run's code location, (re)started when its server changed."""
        if origin is None or context.workspace is None or run.remote_job_origin is None:
            return None
        location = run.remote_job_origin.repository_origin.code_location_origin.location_name
        try:
            server = str(getattr(context.workspace.get_code_location(location), "server_id", ""))
        except Exception:  # no location here: the default launcher
            return None
        with self._workers_lock:
            current = self._workers.get(location)
            if current and current[0] == server and current[1].process.poll() is None:
                return current[1]
            if current:
                current[1].close()
            try:
                worker = _Worker(origin.repository_origin)
            except (OSError, RuntimeError, ValueError) as exc:
                self._instance.report_engine_event(
                    f"warm run worker could not start ({exc}); Dagster's launcher starts the run",
                    run, cls=self.__class__)
                return None
            if not worker.ready.get("ready"):
                self._instance.report_engine_event(
                    f"warm run worker could not load the code ({worker.ready.get('error')}); "
                    "Dagster's launcher starts the run", run, cls=self.__class__)
                worker.close()
                return None
            self._workers[location] = (server, worker)
            return worker

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None or PID_TAG not in run.tags:
            return super().terminate(run_id)
        if run.is_finished:
            return False
        self._instance.report_run_canceling(run)
        try:
            os.kill(int(run.tags[PID_TAG]), signal.SIGINT)
        except ProcessLookupError:
            return False
        return True

    def dispose(self) -> None:
        with self._workers_lock:
            for _, worker in self._workers.values():
                worker.close()
            self._workers.clear()
        super().dispose()


def _execute(run_id: str, ref: str, origin: RepositoryPythonOrigin) -> None:
    """In the forked child: execute the run as Dagster's run worker does."""
    from dagster import DagsterInstance
    from dagster._core.events import EngineEventData
    from dagster._core.instance.ref import InstanceRef
    from dagster._grpc.impl import core_execute_run
    from dagster._utils.hosted_user_process import recon_job_from_origin

    with DagsterInstance.from_ref(deserialize_value(ref, InstanceRef)) as instance:
        run = instance.get_run_by_id(run_id)
        if run is None or run.job_code_origin is None:
            return
        instance.report_engine_event(f"Started process for run (pid: {os.getpid()}), forked "
                                     "from the warm run worker.", run,
                                     EngineEventData.in_process(os.getpid()))
        for _ in core_execute_run(recon_job_from_origin(run.job_code_origin), run, instance,
                                  inject_env_vars=False):
            pass
        instance.report_engine_event(f"Process for run exited (pid: {os.getpid()}).", run)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _serve(origin: RepositoryPythonOrigin) -> None:
    """The worker: load the code, then fork one child per run id read from stdin."""
    # The protocol keeps stdin and stdout; anything printed goes to stderr (the daemon's log).
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    try:
        from dagster._core.instance import DagsterInstance  # noqa: F401 (warm for the children)
        from dagster._grpc import impl  # noqa: F401
        from dagster._utils.hosted_user_process import recon_repository_from_origin

        recon_repository_from_origin(origin).get_definition()
    except Exception as exc:  # said to the launcher, which falls back
        answers.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        answers.flush()
        return
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    while True:
        readable, _, _ = select.select([requests], [], [], 1.0)
        _reap()
        if not readable:
            continue
        line = requests.readline()
        if not line:
            break
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            requests.close()
            answers.close()
            code = 0
            try:
                _execute(request["run_id"], request["ref"], origin)
            except BaseException:  # the run's events say what failed
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
    while True:  # stdin closed: wait for the runs still going, then exit
        try:
            os.wait()
        except ChildProcessError:
            return


if __name__ == "__main__":
    try:
        _serve(deserialize_value(sys.argv[1], RepositoryPythonOrigin))
    except KeyboardInterrupt:  # Ctrl-C on the services' terminal: the runs stop on their own
        sys.exit(130)
