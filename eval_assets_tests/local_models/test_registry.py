"""The local models are known by one list of names, and each name builds its model."""

from __future__ import annotations

import threading
import time

import pytest

from eval_assets.local_models import smollm2
from eval_assets.local_models.registry import LOCAL_MODELS, load_local_model, preload
from eval_assets.schemas.endpoint import LOCAL_MODEL_NAMES, Endpoint


def test_the_endpoint_accepts_exactly_the_models_the_registry_builds() -> None:
    assert set(LOCAL_MODELS) == set(LOCAL_MODEL_NAMES)
    for name in LOCAL_MODEL_NAMES:
        assert Endpoint(serve=name).api_model == name
    assert load_local_model("random", seed=3).name == "random"


def test_a_model_preloaded_in_the_background_is_loaded_once_for_every_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller that asks while the background load runs waits for it and gets the same model.
    (The load is a slow stand-in: this is about the lock, not SmolLM2, whose own tests load it.)"""
    built: list[object] = []
    loading = threading.Event()

    class SlowModel:
        def __init__(self) -> None:
            loading.set()
            time.sleep(0.3)
            built.append(self)

    monkeypatch.setattr(smollm2, "BlindSmolLM2", SlowModel)
    smollm2._load_shared_blind_smollm2.cache_clear()
    try:
        assert preload(["random"]) is None  # built at once when asked: nothing to load ahead
        thread = preload(["random", "blind-smollm2"])
        assert thread is not None
        assert loading.wait(5)
        first = smollm2.shared_blind_smollm2()  # asked during the load
        thread.join(5)
        assert built == [first] and smollm2.shared_blind_smollm2() is first
    finally:
        smollm2._load_shared_blind_smollm2.cache_clear()
