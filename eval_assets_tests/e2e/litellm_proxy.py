"""LiteLLM's proxy, from its own cached venv, in front of a local server (marker ``reference``).

The venv is built once by ``scripts/reference/litellm_venv.sh`` (about a minute, about 480 MB,
cached in ``~/.cache/eval_assets`` by the pinned requirements' hash); ``scripts/run_tests.sh``
builds it and exports its python as ``EVAL_ASSETS_LITELLM_PYTHON``. Without that variable the
fixture builds it here; it skips only when the build fails, the package index is unreachable and
``EVAL_ASSETS_REQUIRE_REFERENCE`` is unset.

The proxy runs offline: the bundled model cost map (``LITELLM_LOCAL_MODEL_COST_MAP``), telemetry
off, no callbacks, no database, no Redis. Its requests-per-minute limit is the router's
``usage-based-routing-v2`` with ``rpm`` on the deployment: in-memory counters per calendar minute
(``%H-%M``), a request over the limit answered 429. ``num_retries: 0`` makes the proxy pass that
429 on instead of waiting out the minute itself, so that the client sees the limit. In 1.74.15 the
429 carries no ``Retry-After``: the client's own backoff has to span up to a minute.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from eval_assets_tests.reference import build_venv, reference_python

REPO = Path(__file__).resolve().parents[2]
LITELLM_VENV_SCRIPT = REPO / "scripts" / "reference" / "litellm_venv.sh"
PYTHON_ENV = "EVAL_ASSETS_LITELLM_PYTHON"  # set by scripts/run_tests.sh, which builds the venv
_START_TIMEOUT_S = 120.0
# Offline: no download of the cost map, no telemetry; no key or database of the user's leaks in.
_OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
                "PYTHONNOUSERSITE": "1", "PYTHONPATH": "", "PYTHONUNBUFFERED": "1"}
_DROPPED_ENV = ("OPENAI_API_KEY", "DATABASE_URL", "REDIS_HOST", "REDIS_URL", "LITELLM_MASTER_KEY")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_litellm_venv() -> Path:
    """Build (or find cached) the LiteLLM venv and return its python; ``RuntimeError`` if not."""
    return build_venv(LITELLM_VENV_SCRIPT)


@pytest.fixture(scope="session")
def litellm_python() -> Path:
    """Path to the python of the LiteLLM proxy venv (``EVAL_ASSETS_LITELLM_PYTHON``, else built)."""
    return reference_python(PYTHON_ENV, LITELLM_VENV_SCRIPT, "LiteLLM proxy")


def proxy_config(model_name: str, upstream_model: str, api_base: str, rpm: int) -> str:
    """The proxy's config.yaml (JSON is YAML): one deployment with a requests-per-minute limit."""
    config = {
        "model_list": [{"model_name": model_name,
                        "litellm_params": {"model": f"openai/{upstream_model}",
                                           "api_base": api_base, "api_key": "not-needed",
                                           "rpm": rpm}}],
        "router_settings": {"routing_strategy": "usage-based-routing-v2", "num_retries": 0},
        "litellm_settings": {"telemetry": False, "callbacks": [], "success_callback": []},
    }
    return json.dumps(config, indent=2)


def _wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
            raise RuntimeError(f"{url} did not come up (exit {proc.poll()}):\n{tail}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def served(command: list[str], ready_url: str, log: Path, env: dict[str, str] | None = None,
           drop_env: tuple[str, ...] = (), cwd: Path | None = None,
           timeout_s: float = _START_TIMEOUT_S) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` (output to ``log``) until ``ready_url`` answers 200; stop it on exit.

    Its environment is ours without ``drop_env``, with ``env`` on top.
    """
    full_env = {k: v for k, v in os.environ.items() if k not in drop_env} | (env or {})
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=full_env,
                                cwd=cwd)
        try:
            _wait_ready(proc, ready_url, log, timeout_s)
            yield proc
        finally:
            _stop(proc)


@dataclass(frozen=True)
class Gateway:
    """A running proxy: its OpenAI-compatible base URL, the model name it serves, its log."""

    base_url: str
    model: str
    log: Path


@contextmanager
def litellm_gateway(python: Path, workdir: Path, upstream_base_url: str, upstream_model: str,
                    rpm: int, model_name: str = "gateway-model") -> Iterator[Gateway]:
    """LiteLLM's proxy on a free local port in front of ``upstream_base_url``."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(proxy_config(model_name, upstream_model, upstream_base_url, rpm))
    port = free_port()
    command = [str(python.parent / "litellm"), "--config", str(config), "--host", "127.0.0.1",
               "--port", str(port), "--num_workers", "1"]
    base_url = f"http://127.0.0.1:{port}/v1"
    log = workdir / "proxy.log"
    with served(command, base_url + "/models", log, env=_OFFLINE_ENV, drop_env=_DROPPED_ENV,
                cwd=workdir):
        yield Gateway(base_url=base_url, model=model_name, log=log)


def proxy_statuses(log: Path) -> dict[int, int]:
    """Counts of the proxy's chat-completion replies by HTTP status, from its access log."""
    counts: dict[int, int] = {}
    for line in log.read_text(errors="replace").splitlines():
        if '"POST /v1/chat/completions HTTP/1.1"' in line:
            status = int(line.rsplit('" ', 1)[1].split()[0])
            counts[status] = counts.get(status, 0) + 1
    return counts


__all__ = ["Gateway", "build_litellm_venv", "free_port", "litellm_gateway", "litellm_python",
           "proxy_config", "proxy_statuses", "served"]
