"""Template spread and Kendall τ carry their uncertainty: models at chance read as noise, a
planted template effect and a planted ranking do not; the same rows give the same intervals."""

from __future__ import annotations

import random

import numpy as np

import eval_assets.metrics.prompt_controls as pc
from eval_assets.metrics.prompt_controls import (
    TemplateRow,
    spread_noise,
    tau_interval,
    tau_pairs,
    template_stats,
)
from eval_assets.prompt_controls import TEMPLATE_NAMES
from eval_assets.report.metric_sections import render_table
from eval_assets.schemas.results import CellScores, PredictionCounts
from eval_assets.scoring.prompt_controls import TEMPLATES, TemplateReport


def _guesser(seed: int, n: int, p: float = 0.5, *, record_bonus: float = 0.0
             ) -> list[TemplateRow]:
    """A model right with probability ``p`` on each of ``n`` cases in every template (plus
    ``record_bonus`` in the record template)."""
    rng = random.Random(seed)
    return [TemplateRow(case_id=f"c{i}", family="presence", recording="r", template=t,
                        score=float(rng.random() < p + (record_bonus if t == "record" else 0)))
            for i in range(n) for t in TEMPLATE_NAMES]


def test_guessers_give_a_spread_within_noise_and_a_tau_interval_holding_zero() -> None:
    a, b = _guesser(1, 200), _guesser(2, 200)
    noise = spread_noise(a)
    assert noise.n == 200 and noise.spread is not None and noise.noise_bound is not None
    assert noise.ci_low is not None and noise.ci_high is not None
    assert noise.ci_low <= noise.spread <= noise.ci_high
    assert noise.beyond_noise is False
    for x, y, tau, _ in tau_pairs({"a": template_stats(a).accuracy,
                                   "b": template_stats(b).accuracy}):
        interval = tau_interval({"a": a, "b": b}, x, y)
        assert tau in (-1.0, 1.0, None) and interval is not None
        assert interval[0] <= 0.0 <= interval[1], (x, y, interval)


def test_a_planted_template_effect_and_a_planted_ranking_are_beyond_noise() -> None:
    planted = spread_noise(_guesser(3, 200, record_bonus=0.3))
    assert planted.beyond_noise is True
    assert planted.ci_low is not None and planted.ci_low > 0.15
    # Three models 25 points apart in every template: the same ranking in each, beyond doubt.
    models = {m: _guesser(10 + i, 300, p) for i, (m, p) in enumerate(
        (("weak", 0.25), ("mid", 0.5), ("strong", 0.75)))}
    assert tau_interval(models, "record", "format") == (1.0, 1.0)


def test_the_intervals_are_seeded_and_the_normal_limit_agrees_with_the_draws(
        monkeypatch) -> None:
    rows = _guesser(4, 400)
    assert spread_noise(rows) == spread_noise(rows)
    pair = {"a": rows, "b": _guesser(5, 400, 0.55)}
    assert tau_interval(pair, "record", "paraphrase") == tau_interval(pair, "record",
                                                                     "paraphrase")
    exact = spread_noise(rows)
    monkeypatch.setattr(pc, "EXACT_MAX_CASES", 10)  # the same rows through the normal limit
    approx = spread_noise(rows)
    assert approx.spread == exact.spread
    assert exact.noise_bound is not None and approx.noise_bound is not None
    assert np.isclose(approx.noise_bound, exact.noise_bound, rtol=0.25)
    assert approx.beyond_noise is False


def _cell(model: str, rows: list[TemplateRow]) -> CellScores:
    report = TemplateReport(overall=template_stats(rows), by_family={}, rows=rows)
    return CellScores(
        recording="r", model=model, dataset_sha256="0" * 64,
        predictions=PredictionCounts(cases=1, succeeded=1, failed=0, parse_failures=0,
                                     descriptions=0, descriptions_failed=0),
        scores={TEMPLATES.name: report.model_dump(mode="json")})


def test_the_report_says_indistinguishable_from_noise_for_models_at_chance() -> None:
    assert TEMPLATES.section is not None and TEMPLATES.section.build is not None
    html = render_table(TEMPLATES.section.build([_cell("random", _guesser(6, 120)),
                                                 _cell("random-1", _guesser(7, 120))]))
    line = html.split("all families): </b>", 1)[1].split("</p>", 1)[0]
    assert "[95% CI " in line and "indistinguishable from noise" in line
    assert "Noise bound" in html and "Spread [95% CI]" in html
