"""Each test's controllers start from scratch: what a call group learnt of an endpoint is kept
per process by its base URL and model, and a fake server's port may come round again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eval_assets.model_runs.concurrency import forget_learnt


@pytest.fixture(autouse=True)
def _no_learnt_pacing() -> Iterator[None]:
    forget_learnt()
    yield
    forget_learnt()
