"""The local models ``eval-assets serve`` knows, by name, and how to build one."""

from __future__ import annotations

from collections.abc import Callable

from eval_assets.local_models.base import LocalModel
from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.local_models.smollm2 import shared_blind_smollm2

# The local models `eval-assets serve --model NAME` knows, by name: factory(seed) -> model.
LOCAL_MODELS: dict[str, Callable[[int], LocalModel]] = {
    "random": lambda seed: RandomChoiceModel(seed=seed),
    "blind-smollm2": lambda seed: shared_blind_smollm2(),
}


def load_local_model(name: str, seed: int = 0) -> LocalModel:
    """Build the local model called ``name``; the error lists the known names."""
    factory = LOCAL_MODELS.get(name)
    if factory is None:
        raise ValueError(f"unknown local model {name!r}; choose one of {sorted(LOCAL_MODELS)}")
    return factory(seed)
