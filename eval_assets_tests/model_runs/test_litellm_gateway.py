"""A real gateway: ``vqa run`` through LiteLLM's proxy with a requests-per-minute limit.

The project's local server (``eval-assets serve``, the offline ``random`` model) sits behind the
proxy (see :mod:`eval_assets_tests.e2e.litellm_proxy` for the offline config and its rate limit).
The dataset has more cases than the limit allows in a minute, so the proxy refuses with 429 and the
run must wait into the next minute: it completes with no failed case, and the proxy never serves
more than the limit in one of its calendar-minute windows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_assets.layout import RUN_ENDPOINT
from eval_assets_tests.e2e.litellm_proxy import (
    free_port,
    litellm_gateway,
    litellm_python,  # noqa: F401  (a pytest fixture)
    proxy_statuses,
    served,
)
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, make_dataset

pytestmark = [pytest.mark.slow, pytest.mark.reference]

def _minute(t: float) -> int:
    return int(t // 60)


DEFAULT_RPM = 60
DEFAULT_CASES = 100


def test_vqa_run_through_litellm_proxy_with_default_settings_answers_every_case(
        tmp_path: Path, litellm_python: Path) -> None:  # noqa: F811
    """The models entry names only the endpoint: adaptive concurrency and the default retry
    policy must get 100 cases through a 60 rpm limit whose 429s carry no ``Retry-After``, with
    few refusals (the controller stops on the proxy's ``x-ratelimit-remaining-requests``, probes
    one request at a time until the minute resets, then paces at the rate it learnt)."""
    dataset = make_dataset(tmp_path / "ds", n_frames=DEFAULT_CASES // 2, cases_per_frame=2)
    exe = Path(sys.executable).parent / "eval-assets"
    port = free_port()
    upstream = f"http://127.0.0.1:{port}/v1"
    with served([str(exe), "serve", "--model", "random", "--port", str(port)],
                upstream + "/models", tmp_path / "serve.log", env={"PYTHONUNBUFFERED": "1"}), \
            litellm_gateway(litellm_python, tmp_path / "proxy", upstream, "random",
                            rpm=DEFAULT_RPM) as gateway:
        models = tmp_path / "models.yaml"
        models.write_text(json.dumps({"models": [{
            "name": "gateway", "base_url": gateway.base_url, "model": gateway.model}]}))
        start = time.time()
        proc = subprocess.run([str(exe), "vqa", "run", str(dataset.root), "--model", "gateway",
                               "--models-file", str(models), "--output", str(tmp_path / "run"),
                               "--no-describe", *ONE_CALL_PER_CASE], capture_output=True,
                              text=True, timeout=400, check=False)
        elapsed = time.time() - start
        statuses = proxy_statuses(gateway.log)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"{DEFAULT_CASES}/{DEFAULT_CASES} cases answered" in proc.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["answers"]["success"] == DEFAULT_CASES and summary["answers"]["failed"] == 0
    replies = sum(statuses.values())
    refused = statuses.get(429, 0)
    assert refused <= 0.10 * replies, statuses
    # The proxy served each probe and each case once and refused the rest: its log and our
    # records agree.
    probes = json.loads((tmp_path / "run" / RUN_ENDPOINT).read_text())["calls"]
    assert probes >= 1
    assert statuses.get(200) == DEFAULT_CASES + probes, (statuses, probes)
    assert refused == summary["answers"]["attempts"] - DEFAULT_CASES, (statuses, summary)
    # Never more than the limit in one of the proxy's calendar-minute windows.
    windows = _minute(start + elapsed) - _minute(start) + 1
    assert DEFAULT_RPM * windows >= DEFAULT_CASES + probes, (start, elapsed)
    history = summary["concurrency"]
    print(f"LiteLLM gateway at {DEFAULT_RPM} rpm, default settings: {DEFAULT_CASES} answers, "
          f"{replies} replies, {refused} answered 429 ({refused / replies:.1%}), "
          f"{elapsed:.1f} s from second {start % 60:.0f} of a minute; "
          f"{history['rate_limit_blocks']} stops, learnt {history['learned_rate_per_s']}/s")
