"""The local models ``eval-assets serve`` knows, by name, and how to build one."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import PackageNotFoundError, version

from eval_assets.local_models.base import LocalModel
from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.local_models.smollm2 import gguf_sha256, shared_blind_smollm2, smollm2_gguf_path

# Bump when a local model's replies to the same request could change (its scoring, ranking or
# generation code): it is part of the model's identity, so results kept by identity (the judge's
# calibration cache) are not reused across such a change.
REPLY_RECIPE = {"random": "1", "blind-smollm2": "2"}  # 2: greedy text with drafted tokens

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


# The local models that one instance per process serves (loading takes seconds): worth loading
# ahead. The others are built at once when asked.
SHARED_LOCAL_MODELS = frozenset({"blind-smollm2"})


def preload(names: Iterable[str]) -> threading.Thread | None:
    """Load the shared local models among ``names`` in a background thread, so that the first
    request finds them loaded (a caller that comes earlier waits for this load, not a second
    one). None when there is nothing to load. Join the thread before the process ends: a thread
    still importing torch at interpreter exit can crash it."""
    wanted = sorted(SHARED_LOCAL_MODELS.intersection(names))
    if not wanted:
        return None

    def load() -> None:
        for name in wanted:
            try:
                load_local_model(name)
            except Exception:  # the real request loads it again and reports why
                logging.getLogger(__name__).debug("preloading %s failed", name, exc_info=True)

    thread = threading.Thread(target=load, name="preload-local-models", daemon=True)
    thread.start()
    return thread


def local_model_identity(name: str, seed: int = 0) -> str:
    """What decides the replies of the local model ``name``, as one string: its reply recipe and,
    for SmolLM2, the SHA-256 of its weights file and the torch and transformers versions (their
    arithmetic); for ``random``, its seed. Two models with the same identity give the same reply
    to the same request."""
    if name not in LOCAL_MODELS:
        raise ValueError(f"unknown local model {name!r}; choose one of {sorted(LOCAL_MODELS)}")
    if name == "random":
        return f"random recipe {REPLY_RECIPE[name]} seed {seed}"
    weights = gguf_sha256(smollm2_gguf_path())
    return (f"{name} recipe {REPLY_RECIPE[name]} weights {weights} torch {_version('torch')} "
            f"transformers {_version('transformers')}")


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"
