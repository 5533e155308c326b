"""How every number of the leaderboard is computed, in words: ``METHODS``, written into
``leaderboard.json`` so a reader needs no source code (:mod:`eval_assets.report.leaderboard`)."""

from __future__ import annotations

from typing import Any

from eval_assets.metrics.baselines import FREQUENCY_BASELINE
from eval_assets.metrics.headline import HEADLINE_METHOD, MIN_FAMILY_N
from eval_assets.metrics.stats import (
    ALPHA,
    BOOTSTRAP_REPLICATES,
    BOOTSTRAP_SEED,
    MIN_RELIABLE_N,
    POWER,
)
from eval_assets.scoring import METRICS

__all__ = ["METHODS"]

# How every number is computed, written into the JSON so a reader needs no source code.
METHODS: dict[str, Any] = {
    "accuracy": "raw accuracy: correct / n over every scored case of the row's case set; "
                "parse failures and failed calls count as wrong and stay in n",
    "case_sets": "a case is (recording, dataset_sha256, case id): results on different dataset "
                 "versions share no case. 'common' rows: the cases every ranked model has a "
                 "scored row for (the intersection); models are ranked only on these. "
                 "'answered' rows: every case of the model's usable results; comparable is "
                 "false when that set differs from the common set, and such rows must not be "
                 "ranked against each other",
    "coverage": "every expected (recording, model) cell is ok, missing (no result) or stale "
                "(its dataset_sha256 is not the recording's current dataset fingerprint, its "
                "inputs (answers, label overrides) changed since it was scored, or the caller "
                "marked it; the cell's reason says which); missing and stale cells are in no "
                "row. A model with no ok cell is not ranked; with no case common to all ranked "
                "models there is no ranking",
    "published_from": "per ok cell, SHA-256 of its results and the dataset, answers and label "
                      "overrides they came from; the report shows it stale if any differs now",
    "common_row_metrics": "POPE, MCQ, judge, vision and CHAIR columns are null in 'common' "
                          "rows: they are stored per result, not per case, so they cannot be "
                          "restricted to the common cases",
    "common_chance": "chance of a 'common' row: each case weighted by the chance of its "
                     "(result, family) group (rows do not keep their choice count); exact "
                     "when each family's cases have one choice count",
    "interval": "95% Wilson score interval with n replaced by the effective sample size "
                "n / deff; deff = cluster-robust (CR1) variance of the accuracy over frames "
                "(recording, frame_index) / binomial variance, floored at 1; deff = 1 (reported "
                "null) when not estimable: fewer than 2 frames, or accuracy 0 or 1",
    "paired_comparison": "per pair of models, on the cases both have rows for in their usable "
                         "results (matched by recording, dataset and case id): exact two-sided "
                         "McNemar test (binomial test of the discordant pairs at 0.5; treats "
                         "cases as independent); difference in accuracy (a - b) with a 95% "
                         f"paired cluster-bootstrap percentile interval ({BOOTSTRAP_REPLICATES} "
                         f"replicates resampling frames, SplitMix64 seed {BOOTSTRAP_SEED}); "
                         "significant when the Holm-adjusted McNemar p (mcnemar_p_adjusted) "
                         "< alpha and the interval excludes 0",
    "many_comparisons": "the comparison table of one leaderboard is every pair of models "
                        "overall (paired_comparisons) and per question family "
                        "(family_comparisons): its McNemar p-values are adjusted together by "
                        "Holm's step-down method (family-wise error rate), n_tests of them; "
                        "verdicts use the adjusted p, the raw p is kept beside it (mcnemar_p). "
                        "Checked against statsmodels.stats.multitest.multipletests",
    "minimum_detectable_difference": f"Connor (1987) McNemar sample-size formula solved for the "
                                     f"difference at alpha {ALPHA} two-sided and power {POWER}, "
                                     "with the observed discordance rate (or the least "
                                     "discordance the difference needs, if larger) and n "
                                     "divided by the frame design effect of the paired "
                                     "difference",
    "family_mean": "the headline: " + HEADLINE_METHOD + " Columns: family_mean (and its 95% "
                   "interval: delta method, CR1 over frames across families, clipped to [0, 1]) "
                   "over n_families families with at least "
                   f"{MIN_FAMILY_N} cases; n_families_left_out under that; "
                   "n_families_uninformative whose cases all have one gold answer (a prior "
                   "scores them perfectly); null when no family is in the mean. Per family: "
                   "{family}__score with its interval and {family}__score_chance. The spatial "
                   "families join from each model's own answers to them. Models are ranked on "
                   "it, ties by the raw pooled accuracy, then name",
    "headline_chance": "the mean of the chances of the families in the headline: what every "
                       "answer prior (a constant, the family's most common gold answer, a "
                       "numeric family's median, no answer) scores, exactly, and a random "
                       "guess in expectation",
    "caa": "the headline's chance-adjusted score: (family_mean - headline_chance) / (1 - "
           "headline_chance); 0 for every answer prior, 1 every case right, below 0 worse than "
           "chance; null without a headline. {family}__caa: the same of the family's score",
    "vqa_accuracy": "raw pooled accuracy: correct / n over the row's single-image (dimOS) "
                    "cases, each case weighing the same, so the largest family and its "
                    "answer mix dominate it: a guesser of each family's most common answer "
                    "scores high on it. Not the ranking",
    "raw_caa": "SITE's chance-adjusted accuracy (arXiv 2505.05456; VLMEvalKit spatial_bench "
               "compute_caa_score) of the raw pooled accuracy: (sum X_i - sum 1/n_i) / (N - sum "
               "1/n_i) over the row's N single-image cases with n_i choices, = (vqa_accuracy - "
               "chance) / (1 - chance); 0 is a uniform guess, but an answer-frequency prior "
               "scores above 0 on it; null (not 0) without cases. {family}__raw_caa: per family",
    "frequency_baseline": f"the row of model {FREQUENCY_BASELINE!r} (baseline 'frequency', "
                          "VSI-Bench's Chance Level (Frequency)): every common case answered "
                          "with its family's most common gold answer among the recording's "
                          "common cases (ties by text; a case whose choices lack it counts as "
                          "a parse failure), every spatial case any ranked model has with its "
                          "family's most common gold answer in the recording or, for a "
                          "number, the recording's median gold number; from the labels alone, "
                          "no server. Only a pooled common row; per-cell metrics null",
    "over_blind": "per pooled common row: best_blind = the blind baseline with the highest "
                  "family_mean other than the row's model, among the random baseline, "
                  "the blind local models (baseline 'random' / 'blind', from their run "
                  "configs) and the frequency baseline; over_blind = the row's headline minus "
                  "best_blind's on the cases both answered (families chosen on those cases), "
                  "with a paired 95% interval (delta method, CR1 over frames); null elsewhere",
    "baselines": "per family on the common cases: frequency = always the family's most "
                 "common gold answer (ties by text; the median for numeric families, scored "
                 "by MRA), from the labels alone; blind = the best model served by a local "
                 "model that never sees the image; each other model against the better of "
                 "the two on raw accuracy (MRA): difference and minimum detectable difference "
                 "(McNemar MDD for 0/1 scores, a normal approximation with the frame design "
                 "effect otherwise); beats when difference > MDD; flagged when no model beats "
                 "it",
    "empty_denominator": "null (n/a), never 0",
    # Each metric's own method lines, in METRICS order.
    **{key: text for spec in METRICS for key, text in spec.methods},
    "alpha": ALPHA,
    "power": POWER,
    "min_reliable_n": MIN_RELIABLE_N,
}
