"""A spatial family's question text: its one wording, declared in
:mod:`eval_assets.vqa.spatial.declared`, filled in by the generators."""

from __future__ import annotations

from eval_assets.family_spec import family


def ask(family_name: str, **fields: str | int) -> str:
    """``family_name``'s declared question with its object names (and image position) filled."""
    spec = family(family_name)
    if spec is None:
        raise KeyError(f"no declared family {family_name!r}")
    return spec.question.format(**fields)
