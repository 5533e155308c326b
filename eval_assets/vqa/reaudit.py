"""The blind-solvability audit re-run on a published or edited dataset folder (``eval-assets vqa
audit``): the same scores and summary as the generator writes (:mod:`eval_assets.vqa.bias`),
written over the folder's ``audit/bias.jsonl`` and ``audit/bias.json``."""

from __future__ import annotations

from pathlib import Path

from eval_assets.vqa.answer_prior import PRIOR_MARGIN
from eval_assets.vqa.bias import (
    FEATURES,
    METHOD,
    BiasAudit,
    BiasConfig,
    BiasSummary,
    case_records,
    dataset_cases,
    family_summary,
    read_bias_summary,
    score_cases,
    write_bias_audit,
)

__all__ = ["reaudit"]


def reaudit(dataset_dir: Path, config: BiasConfig | None = None) -> BiasAudit:
    """The audit of a published (or edited) dataset folder as it is now, written over its
    ``audit/bias.jsonl`` and ``audit/bias.json`` (atomically, each file). ``config`` defaults
    to the one its audit was made with (else the defaults); it never prunes (that would drop
    cases from the dataset), and a record of an earlier pruning is kept. Raises
    ``FileNotFoundError`` without the dataset's cases or audit labels."""
    import sklearn

    root = Path(dataset_dir)
    before = read_bias_summary(root)
    if config is None:
        config = before.config if before is not None else BiasConfig()
    config = config.model_copy(update={"prune": False})
    cases = dataset_cases(root)
    result = score_cases(cases, config)
    summary = BiasSummary(method=METHOD, features=list(FEATURES), config=config,
                          sklearn_version=sklearn.__version__, folds=result.folds,
                          families=family_summary(cases, result, config),
                          pruning=before.pruning if before is not None else None,
                          prior_margin=PRIOR_MARGIN)
    audit = BiasAudit(cases=case_records(cases, result, config), summary=summary,
                      kept=[c.id for c in cases])
    write_bias_audit(root, audit)
    return audit
