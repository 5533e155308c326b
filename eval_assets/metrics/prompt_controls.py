"""The prompt controls' statistics (``../shared/specs/validity.md``): the score per template with
the rank stability of the models between templates, stability under sampling, and parse
failures with and without a JSON schema.

A row is one case a control asked, dimOS's or a spatial (or motion) one. Each answer is scored
by its family's own rule (the scoring layer, :mod:`eval_assets.scoring.prompt_controls`, reads
it): 1 or 0 for a choice (a failed call or a reply that names no choice is 0), the numeric
metric's MRA (OSI-Bench's zero rule where declared) or mean angular accuracy for a number (an
unparseable reply is 0). A group's "accuracy" is the mean of those scores: the share right for
choice families, the mean MRA / angular accuracy for number families, and their mean over cases
for a group that holds both.

- **Templates**: a case's score in each template (``record`` is its own answer in
  ``answers.jsonl``); only cases answered in all three templates are counted, so the templates
  are compared on the same cases. Per model the **min–max** of the three; per report the
  **Kendall τ-b** between the models' leaderboards of each template pair (:func:`kendall_tau`:
  ties handled as scipy's ``kendalltau`` does; None with fewer than two models or when one
  leaderboard is all ties).
- **Repeats** (lmms-eval's stability metrics), over cases with all k repeats recorded:
  **consistency** = the share whose k answers are the same (the same choice, or the same
  parsed number; a parse failure is no answer, so a case with one is inconsistent);
  **expected accuracy** = the mean over cases of its repeats' mean score; **majority-vote
  accuracy** = the mean of the vote's score: a choice case's most frequent choice (a strict
  plurality; a tie is no majority, 0), a number case's median of its parsed values (the
  numeric vote; 0 when none parsed).
- **Structured**: over the cases asked with the schema, the **parse-failure rate** without it
  (the free-text answer) and with it = answered replies that give no answer (no choice, no
  number) / answered replies (a failed call is neither: counted apart), and the score each way.

Empty denominators are None ("n/a"), never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations

from pydantic import BaseModel, Field

from eval_assets.prompt_controls import TEMPLATE_NAMES

__all__ = ["RepeatRow", "RepeatStats", "StructuredRow", "StructuredStats", "TemplateRow",
           "TemplateStats", "kendall_tau", "majority_choice", "median", "repeat_stats",
           "structured_stats", "tau_pairs", "template_stats"]


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of two paired sequences (ties in either corrected for, as
    ``scipy.stats.kendalltau``'s default); None when undefined (fewer than two pairs, or one
    sequence constant)."""
    if len(x) != len(y):
        raise ValueError(f"kendall_tau needs paired sequences; got {len(x)} and {len(y)} values")
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue  # tied in both: in neither tie count of τ-b's denominator terms below
        if dx == 0:
            ties_x += 1
        elif dy == 0:
            ties_y += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


# --- templates ------------------------------------------------------------------------------

class TemplateRow(BaseModel):
    """One case in one template: its answer's score by its family's rule, in [0, 1] (None: the
    template's call is missing, the case is then not compared)."""

    case_id: str
    family: str
    recording: str
    template: str
    score: float | None


class TemplateStats(BaseModel):
    """The mean score per template over the cases answered in every template, and its range."""

    n: int = Field(description="cases answered in every template")
    accuracy: dict[str, float | None] = Field(
        description="template -> mean score (accuracy for choices, MRA / angular accuracy for "
                    "numbers)")
    min_accuracy: float | None
    max_accuracy: float | None


def template_stats(rows: Iterable[TemplateRow]) -> TemplateStats:
    """The templates' mean scores over the cases recorded in all of them."""
    by_case: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        if r.score is not None:
            by_case.setdefault((r.recording, r.case_id), {})[r.template] = r.score
    complete = [c for c in by_case.values() if all(t in c for t in TEMPLATE_NAMES)]
    n = len(complete)
    accuracy = {t: (sum(c[t] for c in complete) / n if n else None) for t in TEMPLATE_NAMES}
    values = [a for a in accuracy.values() if a is not None]
    return TemplateStats(n=n, accuracy=accuracy, min_accuracy=min(values) if values else None,
                         max_accuracy=max(values) if values else None)


def tau_pairs(by_model: dict[str, dict[str, float | None]]
              ) -> list[tuple[str, str, float | None, int]]:
    """For each pair of templates: (template, template, Kendall τ-b of the models' accuracies
    in the two, models compared). Only models with an accuracy in every template count."""
    models = sorted(m for m, acc in by_model.items()
                    if all(acc.get(t) is not None for t in TEMPLATE_NAMES))
    out: list[tuple[str, str, float | None, int]] = []
    for a, b in combinations(TEMPLATE_NAMES, 2):
        xs = [float(by_model[m][a] or 0.0) for m in models]
        ys = [float(by_model[m][b] or 0.0) for m in models]
        out.append((a, b, kendall_tau(xs, ys) if len(models) >= 2 else None, len(models)))
    return out


# --- repeats --------------------------------------------------------------------------------

class RepeatRow(BaseModel):
    """One case's k sampled answers (the choice, or the parsed number as text; None: no
    answer), each one's score, and the score of their vote (module docstring)."""

    case_id: str
    family: str
    recording: str
    answers: list[str | None]
    scores: list[float]
    vote_score: float


class RepeatStats(BaseModel):
    """Stability under sampling over a group of cases."""

    n: int = Field(description="cases with all k repeats recorded")
    k: int
    consistency: float | None
    expected_accuracy: float | None
    majority_accuracy: float | None


def majority_choice(choices: Sequence[str | None]) -> str | None:
    """The strict-plurality choice of a case's repeats; None on a tie or without any."""
    counts = Counter(c for c in choices if c is not None).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def median(values: Sequence[float]) -> float | None:
    """The median of a number case's parsed repeats (its vote); None without any."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return None
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def repeat_stats(rows: Iterable[RepeatRow], k: int) -> RepeatStats:
    """Consistency, expected and majority-vote accuracy of the rows with all ``k`` repeats."""
    full = [r for r in rows if len(r.answers) == k and len(r.scores) == k]
    n = len(full)
    if not n:
        return RepeatStats(n=0, k=k, consistency=None, expected_accuracy=None,
                           majority_accuracy=None)
    consistent = sum(1 for r in full if r.answers[0] is not None and len(set(r.answers)) == 1)
    expected = math.fsum(math.fsum(r.scores) / k for r in full) / n
    majority = math.fsum(r.vote_score for r in full) / n
    return RepeatStats(n=n, k=k, consistency=consistent / n, expected_accuracy=expected,
                       majority_accuracy=majority)


# --- structured -----------------------------------------------------------------------------

class StructuredRow(BaseModel):
    """One case asked free and with the schema: whether each reply came back (answered), gave
    an answer (parsed: a choice, or a number) and its score by the family's rule."""

    case_id: str
    family: str
    recording: str
    free_answered: bool
    free_parsed: bool
    free_score: float
    schema_answered: bool
    schema_parsed: bool
    schema_score: float


class StructuredStats(BaseModel):
    """Parse failures and scores without and with the schema, over a group of cases."""

    n: int
    free_parse_failure: float | None
    schema_parse_failure: float | None
    free_accuracy: float | None
    schema_accuracy: float | None
    schema_not_answered: int = Field(
        default=0, description="cases whose schema call failed or was refused (an endpoint "
                               "that cannot honour the schema): in no parse-failure rate")


def _rate(numerator: float, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def structured_stats(rows: Iterable[StructuredRow]) -> StructuredStats:
    """The parse-failure rates (over answered replies) and mean scores of a group of rows."""
    rows = list(rows)
    free = [r for r in rows if r.free_answered]
    schema = [r for r in rows if r.schema_answered]
    n = len(rows)
    return StructuredStats(
        n=n, free_parse_failure=_rate(sum(not r.free_parsed for r in free), len(free)),
        schema_parse_failure=_rate(sum(not r.schema_parsed for r in schema), len(schema)),
        free_accuracy=_rate(math.fsum(r.free_score for r in rows), n),
        schema_accuracy=_rate(math.fsum(r.schema_score for r in rows), n),
        schema_not_answered=n - len(schema))
