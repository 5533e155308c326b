"""Every question family, declared: the one module above the declaring modules and the registry.

Importing this module imports the modules that declare the built-in families
(:mod:`eval_assets.vqa.families`: dimOS's seven; :mod:`eval_assets.vqa.spatial.declared`: the
spatial and motion ones), in the families' order, and marks the registry of
:mod:`eval_assets.family_spec` complete. A reader above the generators (the scorer, the report,
the Dagster layer) imports its lookups from here, so the registry is filled whatever was imported
first; the registry itself imports no declaring module (it sits below them, and they import it).
"""

from __future__ import annotations

from eval_assets.family_spec import (
    FamilySpec,
    TimeControl,
    all_declared,
    declared,
    families,
    family,
    family_names,
    register,
    unregister,
)
from eval_assets.vqa.families import FRAME_FAMILIES
from eval_assets.vqa.spatial.declared import SPATIAL_DECLARED

all_declared()

BUILT_IN: tuple[FamilySpec, ...] = (*FRAME_FAMILIES, *SPATIAL_DECLARED)
"""The built-in families in declaration order: dimOS's, then the spatial and motion ones."""

__all__ = ["BUILT_IN", "FamilySpec", "TimeControl", "declared", "families", "family",
           "family_names", "register", "unregister"]
