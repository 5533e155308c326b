"""Scoring one model's run on one recording's dataset with every metric of the library.

This joins what only the scorer may read (private labels, audit evidence, human annotations) with
the model's recorded answers and descriptions, and calls :mod:`eval_assets.metrics`. No Dagster.
"""
