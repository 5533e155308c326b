"""The real dimOS 0.0.15, in its own cached venv, for parity tests (marker ``reference``).

Import the fixture into a test module (``from eval_assets_tests.reference import dimos_python``)
and run scripts in that venv with :func:`run_dimos`. The venv is built once by
``scripts/reference/dimos_venv.sh`` (about two minutes, cached in ``~/.cache/eval_assets``).

If it cannot be built, the tests fail; they are skipped only when the package index cannot be
reached (no network) and ``EVAL_ASSETS_REQUIRE_REFERENCE`` is unset. Set that variable where the
reference must run (CI) so a missing network fails instead of skipping.
"""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parent.parent
DIMOS_VENV_SCRIPT = REPO / "scripts" / "reference" / "dimos_venv.sh"
REQUIRE_ENV = "EVAL_ASSETS_REQUIRE_REFERENCE"
PYTHON_ENV = "EVAL_ASSETS_DIMOS_PYTHON"  # set by scripts/run_tests.sh, which builds the venv first
_BUILD_TIMEOUT_S = 1200
# dimOS writes tags with SQLite jsonb() (SQLite >= 3.45); the system Python's sqlite3 is older.
_SQLITE_SHIM = 'import pysqlite3, sys; sys.modules["sqlite3"] = pysqlite3\n'


def _index_hosts() -> list[tuple[str, int]]:
    """Hosts the build downloads from: pip's index (PIP_INDEX_URL or PyPI)."""
    hosts = []
    for url in (os.environ.get("PIP_INDEX_URL"), "https://pypi.org/simple"):
        parts = urlsplit(url or "")
        if parts.hostname:
            hosts.append((parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)))
    return hosts


def network_reachable(timeout_s: float = 5.0) -> bool:
    """Whether any package index host accepts a TCP connection."""
    for host, port in _index_hosts():
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return True
        except OSError:
            continue
    return False


def build_venv(script: Path) -> Path:
    """Build (or find cached) a reference venv with its ``scripts/reference`` script and return its
    python. Raises ``RuntimeError`` with the script's output when the build fails."""
    try:
        proc = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                              timeout=_BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{script} did not finish in {_BUILD_TIMEOUT_S} s") from exc
    lines = proc.stdout.strip().splitlines()
    python = Path(lines[-1]) if lines else None
    if proc.returncode != 0 or python is None or not python.is_file():
        raise RuntimeError(
            f"{script} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
            f"\n{proc.stderr[-4000:]}"
        )
    return python


def reference_python(python_env: str, script: Path, what: str) -> Path:
    """The python of a reference venv: ``$python_env`` when set (no build), else built by
    ``script``. Skips only when the build fails, the package index is unreachable and
    ``EVAL_ASSETS_REQUIRE_REFERENCE`` is unset; every other failure fails the test."""
    given = os.environ.get(python_env)
    if given:
        if not Path(given).is_file():
            pytest.fail(f"{python_env}={given} is not a file; unset it or run "
                        f"{script.relative_to(REPO)}, which prints the path", pytrace=False)
        return Path(given)
    try:
        return build_venv(script)
    except RuntimeError as exc:
        if not os.environ.get(REQUIRE_ENV) and not network_reachable():
            pytest.skip(
                f"{what} venv cannot be built without network (package index unreachable); "
                f"run {script.relative_to(REPO)} once online, or set {REQUIRE_ENV}=1 to fail "
                f"instead of skipping. Build error: {str(exc).splitlines()[0]}"
            )
        raise


def build_dimos_venv() -> Path:
    """Build (or find cached) the dimOS venv and return its python."""
    return build_venv(DIMOS_VENV_SCRIPT)


@pytest.fixture(scope="session")
def dimos_python() -> Path:
    """Path to the python of the dimOS 0.0.15 reference venv (built once, cached).

    ``EVAL_ASSETS_DIMOS_PYTHON``, when set, names it (no build).
    """
    return reference_python(PYTHON_ENV, DIMOS_VENV_SCRIPT, "reference dimOS")


def run_dimos(python: Path, script: str, *args: object, timeout_s: float = 300,
              cwd: Path | None = None) -> str:
    """Run ``script`` (Python source) in the dimOS venv with ``args`` in ``sys.argv[1:]``.

    The sqlite3 shim dimOS needs is prepended. Returns stdout; fails the test with the script's
    output on a non-zero exit.
    """
    source = _SQLITE_SHIM + textwrap.dedent(script)
    proc = subprocess.run([str(python), "-c", source, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout_s, cwd=cwd, check=False,
                          env={**os.environ, "PYTHONNOUSERSITE": "1", "PYTHONPATH": ""})
    if proc.returncode != 0:
        pytest.fail(f"dimOS reference script failed (exit {proc.returncode}) under {python}:\n"
                    f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}", pytrace=False)
    return proc.stdout


__all__ = ["build_dimos_venv", "build_venv", "dimos_python", "network_reachable",
           "reference_python", "run_dimos"]
