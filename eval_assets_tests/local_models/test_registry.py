"""The local models are known by one list of names, and each name builds its model."""

from __future__ import annotations

from eval_assets.local_models.registry import LOCAL_MODELS, load_local_model
from eval_assets.schemas.endpoint import LOCAL_MODEL_NAMES, Endpoint


def test_the_endpoint_accepts_exactly_the_models_the_registry_builds() -> None:
    assert set(LOCAL_MODELS) == set(LOCAL_MODEL_NAMES)
    for name in LOCAL_MODEL_NAMES:
        assert Endpoint(serve=name).api_model == name
    assert load_local_model("random", seed=3).name == "random"
