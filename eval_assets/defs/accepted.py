"""Dagster APIs in Beta or Preview that the project uses on purpose, with their warning silenced
at the one call that accepts them (and nowhere else)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def quietly(category: type[Warning], build: Callable[[], T]) -> T:
    """``build()`` with ``category`` warnings ignored while it builds the definition."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=category)
        return build()
