"""``--cpu-report=N``: the N tests that used the most CPU, printed after the run.

Wall time (``--durations``) says which tests are long; on a shared 2-core machine with three
xdist workers the suite is bound by CPU, not wall, and a test that waits (a rate-limited gateway)
costs little while one that drives a daemon for minutes costs a core. Measured per test from
setup to teardown: the process's own CPU plus that of its children it waited for (subprocesses,
a Dagster daemon and everything it started, once it has exited). One CI run measured this way
found a third of the suite's CPU in the end-to-end automation test.

Under pytest-xdist each worker measures its tests and sends the figure with the teardown report;
the controller prints the table. Write it with ``=``: with no test path on the command line,
``--cpu-report 15`` reads as an option and a path "15" before this plugin is loaded, and pytest
then finds neither.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

_KEY = "cpu_s"
_STARTED = pytest.StashKey[os.times_result]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-report", type=int, default=0, metavar="N",
                     help="print the N tests that used the most CPU (own + waited children)")


def _cpu(times: os.times_result) -> float:
    return times.user + times.system + times.children_user + times.children_system


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = os.times()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    started = item.stash.get(_STARTED, None)
    if call.when == "teardown" and started is not None:
        report.user_properties.append((_KEY, _cpu(os.times()) - _cpu(started)))


class _Collector:
    def __init__(self, top: int) -> None:
        self.top = top
        self.cpu: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == _KEY:
                self.cpu[report.nodeid] = float(value)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.cpu:
            return
        terminalreporter.write_sep("=", f"most CPU: {self.top} of {len(self.cpu)} tests, "
                                        f"{sum(self.cpu.values()):.0f} s in all")
        for nodeid, seconds in sorted(self.cpu.items(), key=lambda kv: -kv[1])[:self.top]:
            terminalreporter.write_line(f"{seconds:8.1f}s cpu  {nodeid}")


def pytest_configure(config: pytest.Config) -> None:
    top = config.getoption("--cpu-report")
    if top and not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.pluginmanager.register(_Collector(top), "cpu_report_collector")
