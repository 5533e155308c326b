"""The report's opening block, "The answer": which model is best by the board's headline, by how
much over the runner-up and with what certainty, whether each model beats the best baseline, and
what to distrust, before any method is explained.

Everything here is read from what the board already published (the ranked rows of the
leaderboard, its paired comparisons and per-family baselines, its coverage) and from the case
cards' bias-audit flags; nothing is recomputed.

- **Baselines**: a ranked row is a baseline when the caller names it (the blind models, the runs a
  local model served: :func:`eval_assets.report.publish.baseline_models`), when its model is one of
  the local models' names (``random``, ``blind-smollm2``), or when the leaderboard marks it (a
  true ``baseline`` column: how a baseline computed from the labels alone, such as the frequency
  baseline, is ranked beside them). The best baseline is the highest-ranked one.
- **Headline**: the board's (``family_mean`` and its interval); a row without it is read by its
  pooled accuracy, as the ranking does.
- **Certainty**: the board's paired comparison of the two models on their common cases (exact
  McNemar, Holm-adjusted over the comparison table, with a frame-bootstrap interval of the
  difference); its verdict is the comparisons section's.
- **At chance**: the model's pooled accuracy interval contains the chance level of its cases
  (its chance-adjusted accuracy's interval contains 0); where the leaderboard gives the
  headline's own chance level (a ``family_mean_chance`` column), the headline interval is
  checked against it instead.
- **What to distrust**: cells missing or stale, families under the headline's minimum n, models
  whose parse failures exceed :data:`HIGH_PARSE_FAILURE_RATE`, families where no model beats the
  baselines, families the bias audit finds mostly blind-solvable, and families whose gold is
  wrong against a recording's own truth beyond :data:`HIGH_WRONG_GOLD_RATE`, and models some of
  whose replies named another model than the one declared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pandas as pd

from eval_assets.metrics.headline import MIN_FAMILY_N
from eval_assets.metrics.stats import PairedComparison
from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.coverage import Coverage
from eval_assets.report.leaderboard import family_column, leaderboard_families, ranked_rows
from eval_assets.report.markup import esc, missing, p_text, pct, section, table
from eval_assets.schemas.endpoint import LOCAL_MODEL_NAMES
from eval_assets.schemas.evidence_quality import EvidenceQuality
from eval_assets.schemas.report import CaseCard

__all__ = ["HIGH_PARSE_FAILURE_RATE", "HIGH_WRONG_GOLD_RATE", "Answer", "ModelAnswer",
           "answer_section", "baseline_rows", "build_answer", "solvable_by_family"]

HIGH_PARSE_FAILURE_RATE = 0.05  # above it, a model's score is partly its output format's
HIGH_WRONG_GOLD_RATE = 0.10  # above it, a family's gold is too often wrong to rank on
MOSTLY_SOLVABLE = 0.5  # a family with at least this share of flagged cases is named
ChanceSide = Literal["below", "at", "above"]
HEADLINE_CHANCE = "headline_chance"  # the headline's own chance level, when the board has it


@dataclass(frozen=True)
class ModelAnswer:
    """One ranked row as the opening block reads it."""

    model: str
    rank: int
    baseline: bool
    headline: float | None
    low: float | None
    high: float | None
    measure: str  # "headline" or "pooled accuracy" (a row without the headline)
    chance: ChanceSide | None  # its interval against the chance level; None: no chance level
    parse_failure_rate: float | None
    served: bool = True  # a model's run (False: a baseline computed from the labels alone)
    best_blind: str | None = None  # the board's best blind baseline other than this row
    over_blind: tuple[float, float | None, float | None] | None = None  # headline gap, interval
    vs_leader: PairedComparison | None = None  # oriented: model_a is this model
    vs_baseline: PairedComparison | None = None  # against the best baseline, oriented
    families_beaten: tuple[int, int] | None = None  # (beats the better baseline, families)


@dataclass(frozen=True)
class Answer:
    """The opening block's content: the ranked rows, best first, and what to distrust."""

    rows: list[ModelAnswer]
    n_common: int
    best: ModelAnswer | None
    runner_up: ModelAnswer | None
    best_baseline: ModelAnswer | None
    distrust: list[str] = field(default_factory=list)  # HTML items

    @property
    def candidates(self) -> list[ModelAnswer]:
        """The rows that are no baseline: the models under test."""
        return [r for r in self.rows if not r.baseline]

    @property
    def runs(self) -> list[ModelAnswer]:
        """The rows of models that were run (not a baseline computed from the labels)."""
        return [r for r in self.rows if r.served] or self.rows

    @property
    def none_above_chance(self) -> bool:
        """Whether no model that was run is above chance (each at it or below it)."""
        return bool(self.rows) and all(r.chance in ("at", "below") for r in self.runs)


def _value(row: Any, column: str) -> float | None:
    value = getattr(row, column, None)
    return None if value is None or missing(value) else float(value)


def baseline_rows(leaderboard: pd.DataFrame, named: Collection[str] = ()) -> set[str]:
    """The models of ``leaderboard`` that are baselines: those ``named``, the local models'
    names, and the rows the leaderboard marks (a true ``baseline`` column)."""
    out = set(named) | (set(LOCAL_MODEL_NAMES) & set(leaderboard.get("model", [])))
    if "baseline" in leaderboard.columns:
        marked = leaderboard[leaderboard["baseline"].fillna(False).astype(bool)]
        out |= set(marked["model"])
    return out


def _oriented(c: PairedComparison, model: str) -> PairedComparison:
    """``c`` with ``model`` as model_a (the difference's sign and interval flipped if needed)."""
    if c.model_a == model:
        return c

    def neg(v: float | None) -> float | None:
        return None if v is None else -v

    return c.model_copy(update={
        "model_a": c.model_b, "model_b": c.model_a, "a_only": c.b_only, "b_only": c.a_only,
        "accuracy_a": c.accuracy_b, "accuracy_b": c.accuracy_a, "difference": neg(c.difference),
        "difference_ci_low": neg(c.difference_ci_high),
        "difference_ci_high": neg(c.difference_ci_low)})


def _pair(comparisons: Sequence[PairedComparison], a: str, b: str) -> PairedComparison | None:
    for c in comparisons:
        if c.family is None and {c.model_a, c.model_b} == {a, b} and a != b:
            return _oriented(c, a)
    return None


def _chance_side(row: Any, headline: bool) -> ChanceSide | None:
    chance = _value(row, HEADLINE_CHANCE) if headline else None
    if chance is not None:
        low, high = _value(row, "family_mean_ci_low"), _value(row, "family_mean_ci_high")
    else:
        chance = _value(row, "chance")
        low, high = _value(row, "vqa_ci_low"), _value(row, "vqa_ci_high")
    if chance is None or low is None or high is None:
        return None
    return "below" if high < chance else "above" if low > chance else "at"


def solvable_by_family(cards: Sequence[CaseCard]) -> dict[str, tuple[int, int]]:
    """Per family: (cases the bias audit flags blind-solvable, cases it scored), each case once."""
    out: dict[str, tuple[int, int]] = {}
    seen = set()
    for c in cards:
        if c.blind_solvable is None or (c.recording, c.case_id) in seen:
            continue
        seen.add((c.recording, c.case_id))
        flagged, n = out.get(c.family, (0, 0))
        out[c.family] = (flagged + int(c.blind_solvable), n + 1)
    return out


NAMES_SHOWN = 8  # families named in one item of the list; the rest are counted


def _names(families: Sequence[str]) -> str:
    shown = ", ".join(esc(f.replace("_", " ")) for f in families[:NAMES_SHOWN])
    more = len(families) - NAMES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _coverage_item(coverage: Coverage) -> str | None:
    stale, gone = coverage.with_status("stale"), coverage.with_status("missing")
    if not stale and not gone:
        return (f"<b>Coverage</b>: {esc(coverage.summary())} <a href=\"#coverage\">Coverage</a>"
                if coverage.needs_warning else None)
    parts = []
    if stale:
        parts.append(f"{len(stale)} stale (inputs changed since they were scored: "
                     + ", ".join(f"{esc(c.model)} on {esc(c.recording)}" for c in stale) + ")")
    if gone:
        parts.append(f"{len(gone)} missing ("
                     + ", ".join(f"{esc(c.model)} on {esc(c.recording)}" for c in gone) + ")")
    return ("<b>Stale or missing results</b>, in no number: " + "; ".join(parts)
            + '. <a href="#coverage">Coverage</a>')


def _small_item(pooled: pd.DataFrame, leaderboard: pd.DataFrame,
                baselines: Sequence[FamilyBaselines]) -> str | None:
    small: dict[str, int] = {}
    if not pooled.empty:
        first = pooled.iloc[0]
        for family in leaderboard_families(leaderboard):
            n = int(first[family_column(family, "n")])
            if 0 < n < MIN_FAMILY_N:
                small[family] = n
    for b in baselines:
        if 0 < b.n < MIN_FAMILY_N:
            small.setdefault(b.family, b.n)
    if not small:
        return None
    return (f"<b>{len(small)} families too small</b> (fewer than {MIN_FAMILY_N} cases: left "
            "out of the headline, read as anecdotes): "
            + _names([f"{f} ({n})" for f, n in small.items()]))


def _parse_item(rows: Sequence[ModelAnswer]) -> str | None:
    high = [r for r in rows if r.parse_failure_rate is not None
            and r.parse_failure_rate > HIGH_PARSE_FAILURE_RATE]
    if not high:
        return None
    return (f"<b>High parse-failure rate</b> (above {HIGH_PARSE_FAILURE_RATE:.0%}: the score is "
            "partly the output format's): "
            + ", ".join(f"{esc(r.model)} {pct(r.parse_failure_rate)}" for r in high))


def _prior_item(baselines: Sequence[FamilyBaselines]) -> str | None:
    flagged = [b.family for b in baselines if b.flagged]
    if not flagged:
        return None
    return (f"<b>{len(flagged)} of {len(baselines)} families: no model beats the frequency or "
            "blind baseline</b> by more than the detectable difference; their scores are the "
            f'language prior: {_names(flagged)}. <a href="#baselines">Baselines</a>')


def _solvable_item(solvable: Mapping[str, tuple[int, int]]) -> str | None:
    audited = sum(n for _, n in solvable.values())
    if not audited:
        return None
    share = sum(k for k, _ in solvable.values()) / audited
    text = (f"<b>{share:.0%} of the {audited:,} audited cases are blind-solvable</b> (the bias "
            "audit's forest answers them without the image)")
    mostly = sorted(f for f, (k, n) in solvable.items() if n and k / n >= MOSTLY_SOLVABLE)
    if mostly:
        text += f"; mostly so in {_names(mostly)}"
    return text + '. <a href="#cases">Filter the cases</a>'


def _wrong_gold_item(evidence_quality: Sequence[EvidenceQuality]) -> str | None:
    wrong = sorted({f.family for q in evidence_quality for f in q.families
                    if f.wrong_rate is not None and f.wrong_rate > HIGH_WRONG_GOLD_RATE})
    if not wrong:
        return None
    return (f"<b>Gold answers wrong</b> in more than {HIGH_WRONG_GOLD_RATE:.0%} of the checked "
            f"cases against the recording's own truth: {_names(wrong)}. "
            '<a href="#evidence-quality">Evidence quality</a>')


def _served_item(models: Collection[str]) -> str | None:
    if not models:
        return None
    return ("<b>Replies from another model</b> than the one declared: "
            + ", ".join(f'<span class="model">{esc(m)}</span>' for m in sorted(models))
            + '. <a href="#served">Which cells</a>')


def build_answer(leaderboard: pd.DataFrame, comparisons: Sequence[PairedComparison],
                 coverage: Coverage, baselines: Sequence[FamilyBaselines] = (), *,
                 baseline_models: Collection[str] = (),
                 solvable: Mapping[str, tuple[int, int]] | None = None,
                 evidence_quality: Sequence[EvidenceQuality] = (),
                 answered_by_another: Collection[str] = ()) -> Answer:
    """The opening block's content from the board's ranked rows, comparisons and baselines;
    ``baseline_models`` the rows that are baselines besides those :func:`baseline_rows` finds,
    ``solvable`` the bias audit's flags per family (:func:`solvable_by_family`),
    ``answered_by_another`` the models some of whose replies named another model."""
    pooled = ranked_rows(leaderboard) if not leaderboard.empty else leaderboard
    marked = baseline_rows(leaderboard, baseline_models) if not leaderboard.empty else set()
    rows = []
    for rank, r in enumerate(pooled.itertuples(index=False), start=1):
        headline = _value(r, "family_mean")
        measure = "headline" if headline is not None else "pooled accuracy"
        gap = _value(r, "over_blind")
        rows.append(ModelAnswer(
            model=str(r.model), rank=rank, baseline=r.model in marked,
            headline=headline if headline is not None else _value(r, "vqa_accuracy"),
            low=_value(r, "family_mean_ci_low" if headline is not None else "vqa_ci_low"),
            high=_value(r, "family_mean_ci_high" if headline is not None else "vqa_ci_high"),
            measure=measure, chance=_chance_side(r, headline is not None),
            parse_failure_rate=_value(r, "parse_failure_rate"),
            served=r.model in coverage.ranked_models,
            best_blind=str(getattr(r, "best_blind", "") or "") or None,
            over_blind=None if gap is None else (gap, _value(r, "over_blind_ci_low"),
                                                 _value(r, "over_blind_ci_high"))))
    candidates = [r for r in rows if not r.baseline]
    pool = candidates or [r for r in rows if r.served] or rows
    best = pool[0] if pool else None
    runner_up = pool[1] if len(pool) > 1 else None
    best_baseline = next((r for r in rows if r.baseline), None)
    out = []
    for r in rows:
        vs_leader = (_pair(comparisons, r.model, best.model)
                     if best is not None and r is not best else None)
        if r is best and runner_up is not None:
            vs_leader = _pair(comparisons, r.model, runner_up.model)
        vs_baseline = (_pair(comparisons, r.model, best_baseline.model)
                       if best_baseline is not None and not r.baseline else None)
        beaten = None
        if not r.baseline:
            mine = [b.models[r.model] for b in baselines if r.model in b.models]
            beaten = (sum(1 for c in mine if c.beats), len(mine)) if mine else None
        out.append(replace(r, vs_leader=vs_leader, vs_baseline=vs_baseline,
                           families_beaten=beaten))

    def same(row: ModelAnswer | None) -> ModelAnswer | None:
        return None if row is None else next(x for x in out if x.model == row.model)

    return Answer(rows=out, n_common=coverage.n_common, best=same(best),
                  runner_up=same(runner_up), best_baseline=same(best_baseline),
                  distrust=[item for item in (
                      _coverage_item(coverage), _small_item(pooled, leaderboard, baselines),
                      _parse_item(out), _prior_item(baselines), _solvable_item(solvable or {}),
                      _wrong_gold_item(evidence_quality), _served_item(answered_by_another))
                      if item is not None])


def _pts(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}"


def _interval(r: ModelAnswer) -> str:
    if r.low is None or r.high is None:
        return ""
    return f' <span class="ci">[{pct(r.low)}–{pct(r.high)}]</span>'


def _verdict(c: PairedComparison | None) -> str:
    """The paired comparison's verdict, as the comparisons section words it."""
    if c is None or c.n_common == 0:
        return '<span class="verdict-no">no paired comparison</span>'
    p = c.mcnemar_p_adjusted if c.mcnemar_p_adjusted is not None else c.mcnemar_p
    p_kind = "Holm p" if c.mcnemar_p_adjusted is not None else "p"
    diff = (f"{_pts(c.difference)} pts <span class=\"ci\">[{_pts(c.difference_ci_low)}, "
            f"{_pts(c.difference_ci_high)}]</span>")
    if c.significant and c.better is not None:
        word = ("significantly better" if c.better == c.model_a else "significantly worse")
        return f'{diff}, {p_kind} {p_text(p)}: <span class="verdict-yes">{word}</span>'
    return (f'{diff}, {p_kind} {p_text(p)}: <span class="verdict-no">not significant'
            "</span>")


def _plural_models(n: int) -> str:
    return {1: "The only model is", 2: "Both models are"}.get(n, f"All {n} models are")


def _established(a: Answer) -> bool:
    """Whether the leader is significantly better than the runner-up."""
    c = a.best.vs_leader if a.best is not None else None
    return c is not None and c.significant and a.best is not None and c.better == a.best.model


def _chance_line(runs: Sequence[ModelAnswer]) -> str:
    """"Both models are at chance level.", or which are below it when some are."""
    below = [r for r in runs if r.chance == "below"]
    if not below:
        return f"{_plural_models(len(runs))} at chance level."
    who = {1: "The only model is", 2: "Neither model is"}.get(len(runs), "No model is")
    return (f"{who} above chance level ("
            + ", ".join(f'<span class="model">{esc(r.model)}</span>' for r in below)
            + " below it).")


def _answer_line(a: Answer) -> str:
    """The one-line answer, in large type."""
    best, runner = a.best, a.runner_up
    assert best is not None
    if a.none_above_chance:
        text = _chance_line(a.runs)
        if not a.candidates:
            text += " Only baselines were run."
        return f'<p class="answer-line">{text}</p>'
    text = f'<span class="model">{esc(best.model)}</span> is best'
    if runner is not None and best.headline is not None and runner.headline is not None:
        text += (f", {_pts(best.headline - runner.headline)} pts over "
                 f'<span class="model">{esc(runner.model)}</span>'
                 + (" (significant)" if _established(a) else ": <u>not established</u>"))
    if a.candidates and a.best_baseline is not None:
        beating = sum(1 for r in a.candidates if _beats(r))
        text += (f". {beating} of {len(a.candidates)} beat the best baseline"
                 if len(a.candidates) > 1 else
                 f"; it {'beats' if beating else 'does not beat'} the best baseline")
    return f'<p class="answer-line">{text}.</p>'


def _lead_sentence(a: Answer) -> str:
    best, runner = a.best, a.runner_up
    assert best is not None
    what = "headline" if best.measure == "headline" else "pooled accuracy"
    text = (f'<span class="model">{esc(best.model)}</span> '
            f"{'leads' if a.none_above_chance or best.baseline else 'is best'}: {what} "
            f"<b>{pct(best.headline)}</b>{_interval(best)}")
    if runner is None:
        return text + "; no second model to compare with."
    if best.headline is not None and runner.headline is not None:
        text += (f", <b>{_pts(best.headline - runner.headline)} pts</b> over "
                 f'<span class="model">{esc(runner.model)}</span> ({pct(runner.headline)}'
                 f"{_interval(runner)}).")
    c = best.vs_leader
    if c is None or c.n_common == 0:
        return text + " No paired comparison of the two."
    text += (f" Paired test on the {c.n_common:,} cases both answered, raw pooled accuracy "
             f'<span class="model">{esc(c.model_a)}</span> &minus; '
             f'<span class="model">{esc(c.model_b)}</span>: {_verdict(c)}')
    if not _established(a):
        text += (" — the order of these two is <b>not established</b>" +
                 (f"; these cases detect only differences above {c.mdd * 100:.1f} pts"
                  if c.mdd is not None else ""))
    return text + "."


def _verdict_html(a: Answer) -> str:
    parts = []
    if not a.candidates:
        parts.append("Every ranked row is a baseline (" + ", ".join(
            esc(r.model) for r in a.rows) + "): no model under test is ranked.")
    if a.none_above_chance:
        parts.append("No model's 95% interval lies above the chance level of its cases (the "
                     "score any answer prior or a uniform guess gets): no order below says "
                     "anything about seeing.")
    parts.append(_lead_sentence(a))
    if a.candidates:
        if a.best_baseline is None:
            parts.append("<b>No baseline was run</b> (random guesser, blind model, frequency "
                         "prior): nothing says how much of any score a guess without the "
                         "image gets.")
        else:
            beating = [r for r in a.candidates if _beats(r)]
            parts.append(f"{len(beating)} of {len(a.candidates)} models significantly beat "
                         f'the best baseline, <span class="model">'
                         f"{esc(a.best_baseline.model)}</span> ({pct(a.best_baseline.headline)})"
                         + (": " + ", ".join(f'<span class="model">{esc(r.model)}</span>'
                                            for r in beating) if beating else "") + ".")
    return _answer_line(a) + '<p class="verdict">' + " ".join(parts) + "</p>"


def _beats(r: ModelAnswer) -> bool:
    """Whether the row is above the best blind baseline: the board's headline gap with its
    interval above 0, or else (an older board) the paired test significantly so."""
    if r.over_blind is not None and r.over_blind[1] is not None:
        return r.over_blind[1] > 0
    c = r.vs_baseline
    return c is not None and c.significant and c.better == r.model


def _gap(r: ModelAnswer) -> str:
    """The board's headline gap over the best blind baseline, with its interval and verdict."""
    assert r.over_blind is not None
    value, low, high = r.over_blind
    interval = ("" if low is None or high is None else
                f' <span class="ci">[{_pts(low)}, {_pts(high)}]</span>')
    verdict = ('<span class="verdict-yes">above it</span>' if _beats(r) else
               '<span class="verdict-no">not above it</span>')
    return (f'{_pts(value)} pts over <span class="model">{esc(r.best_blind or "")}</span>'
            f"{interval}: {verdict}")


def _baseline_cell(a: Answer, r: ModelAnswer) -> str:
    chip = '<span class="chip">baseline</span> ' if r.baseline else ""
    if r.over_blind is not None:
        text = chip + _gap(r)
    elif r.baseline:
        return chip
    elif a.best_baseline is None:
        return '<span class="na">no baseline run</span>'
    else:
        gap = (None if r.headline is None or a.best_baseline.headline is None
               else r.headline - a.best_baseline.headline)
        text = (f"{_pts(gap)} pts vs {esc(a.best_baseline.model)}; paired: "
                + _verdict(r.vs_baseline))
    if r.families_beaten is not None:
        k, n = r.families_beaten
        text += f' <span class="ci">beats the better baseline in {k} of {n} families</span>'
    return text


def _chance_cell(r: ModelAnswer) -> str:
    if r.chance is None:
        return '<span class="na">n/a</span>'
    return {"at": '<span class="flag">at chance</span>',
            "below": '<span class="flag">below chance</span>',
            "above": '<span class="verdict-yes">above chance</span>'}[r.chance]


def answer_section(a: Answer) -> str:
    """The opening block's HTML."""
    title = "The answer"
    if not a.rows:
        return section("answer", title, "", '<p class="verdict">No ranking: no case is common '
                       "to every model, so no model can be called best. "
                       '<a href="#coverage">Coverage</a></p>' + _distrust_html(a))
    headers = [("#", True), ("Model", False), ("Headline [95% CI]", False),
               ("vs the leader (paired test, raw accuracy)", False),
               ("Headline over the best blind baseline", False), ("Chance", False)]
    rows = []
    for r in a.rows:
        vs_leader = ("leader" if r is a.best else
                     _verdict(r.vs_leader) if r.vs_leader is not None else
                     '<span class="na">n/a</span>')
        if r is a.best and a.runner_up is not None:
            vs_leader = f"vs {esc(a.runner_up.model)}: {_verdict(r.vs_leader)}"
        measure = "" if r.measure == "headline" else ' <span class="ci">(pooled)</span>'
        rows.append([str(r.rank), f'<span class="model">{esc(r.model)}</span>',
                     f"<b>{pct(r.headline)}</b>{_interval(r)}{measure}", vs_leader,
                     _baseline_cell(a, r), _chance_cell(r)])
    how = ('<p class="summary">Headline: the board\'s (<a href="#headline">definition and '
           f"every column</a>), on the {a.n_common:,} cases every ranked model answered. "
           "Differences: exact McNemar test, Holm-adjusted, with a frame-bootstrap interval "
           '(<a href="#comparisons">comparisons</a>). <a href="#methods">Methods</a>.</p>')
    body = (_verdict_html(a) + '<div class="answer-grid"><div>' + table(headers, rows)
            + how + "</div>" + _distrust_html(a) + "</div>")
    return section("answer", title, "", body)


def _distrust_html(a: Answer) -> str:
    if not a.distrust:
        return ('<div class="distrust"><h3>What to distrust</h3><p class="summary">Nothing '
                "flagged: every cell current, no family too small, no high parse-failure "
                "rate.</p></div>")
    items = "".join(f"<li>{item}</li>" for item in a.distrust)
    return f'<div class="distrust"><h3>What to distrust</h3><ul>{items}</ul></div>'
