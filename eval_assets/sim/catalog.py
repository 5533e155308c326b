"""The objects a simulated scene may hold: plain names → ``pybullet_data`` models and scales.

Names are what a person calls the thing ("teddy bear", not ``teddy_vhacd``): they become the
benchmark's vocabulary. Scales bring each model to a size a camera 0.6 m above the floor sees
from a few metres (the bundled duck is 8 cm, the soccer ball 1 m).
"""

from __future__ import annotations

from dataclasses import dataclass

from eval_assets.errors import InputError


class SimConfigError(InputError, ValueError):
    """Simulator options that cannot work; the message names the option and the fix."""


@dataclass(frozen=True)
class CatalogEntry:
    """One nameable model: its URDF inside ``pybullet_data``, scale, and whether it is fixed.

    ``fixed``: loaded with ``useFixedBase`` (the table's collision shape is only its top, so
    a free table would drop its top onto the floor and sink its legs through it).
    """

    name: str
    urdf: str
    global_scaling: float
    fixed: bool = False


CATALOG: dict[str, CatalogEntry] = {e.name: e for e in (
    CatalogEntry("duck", "duck_vhacd.urdf", 3.0),
    CatalogEntry("teddy bear", "teddy_vhacd.urdf", 3.5),
    CatalogEntry("mug", "objects/mug.urdf", 3.0),
    CatalogEntry("soccer ball", "soccerball.urdf", 0.3),
    CatalogEntry("tray", "tray/traybox.urdf", 1.0),
    CatalogEntry("jenga block", "jenga/jenga.urdf", 3.0),
    CatalogEntry("lego brick", "lego/lego.urdf", 6.0),
    CatalogEntry("table", "table/table.urdf", 0.7, fixed=True),
)}
"""Every name a scene may use, in the order a default scene picks them."""

DISTRACTORS: tuple[CatalogEntry, ...] = (
    # Not in the vocabulary: pixels of these are background (255) in the truth maps.
    CatalogEntry("r2d2", "r2d2.urdf", 0.6),
)


def entries_for(names: list[str] | None, count: int) -> list[CatalogEntry]:
    """``count`` catalog entries: ``names`` cycled (default: the whole catalog, in order).

    Raises :class:`SimConfigError` for an unknown name or a count below 1.
    """
    if count < 1:
        raise SimConfigError(f"--objects must be at least 1, got {count}; pass --objects N ≥ 1")
    chosen = names if names else list(CATALOG)
    unknown = [n for n in chosen if n not in CATALOG]
    if unknown:
        raise SimConfigError(
            f"unknown object name(s) {', '.join(repr(n) for n in unknown)} in --names; "
            f"use names from: {', '.join(CATALOG)}")
    return [CATALOG[chosen[i % len(chosen)]] for i in range(count)]
