"""The Dagster layer: assets, resources, partitions, checks and automation that wire the core,
and the local runner (:mod:`eval_assets.defs.local`) behind ``eval-assets run`` and the Python API.

Nothing here computes: each asset body reads its inputs through the storage layout, calls one
function of the core library (which never imports Dagster) and reports what it wrote.
"""
