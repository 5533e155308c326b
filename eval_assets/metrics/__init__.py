"""Metric implementations (pure library code, no Dagster).

Submodules: ``vision`` (VisionSimilarity / VisionHallucination), ``embedders`` (sentence
embedders and the cosine scorer), ``chair`` (CHAIR object hallucination), ``pope`` (POPE yes/no
metrics) and ``vqa`` (multiple-choice VQA accuracy). Nothing heavy is imported here: torch and
sentence-transformers load only when an embedder first loads a model.
"""
