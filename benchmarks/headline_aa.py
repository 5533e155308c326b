"""A/A test of the headline: two copies of one random guesser must not be ranked apart.

    python benchmarks/headline_aa.py [--datasets DIR ...] [--pairs 20]
    python benchmarks/headline_aa.py --smoke   # 2 pairs on a small built-in case set

Each pair is two instances of the project's chance-level model
(:class:`eval_assets.local_models.random_choice.RandomChoiceModel`) that differ only in their
seed (pair k: seeds 2k + 1 and 2k + 2). Both answer every case of the datasets (the demo's:
``<repo>/.eval_assets/datasets/*`` after ``make demo``, or ``--datasets``), each dataset
being one recording. The request each guesser sees is the real one
(:func:`eval_assets.model_runs.prompts.vqa_messages`: system prompt, image, question text with the
choices) except that the image is replaced by its SHA-256 digest: the guesser's pick depends on
the request only through a hash seeded with its seed, so the draws have the same distribution,
and no PNG is read or hashed 40 times. Answers are scored by the real path
(:func:`eval_assets.metrics.vqa.vqa_accuracy`: the headline is its ``family_mean``, the
prior-free mean over families of issue 41), and the
pair is compared by the report's paired comparison
(:func:`eval_assets.metrics.stats.paired_comparison`, overall and per family, Holm-adjusted
together by :func:`eval_assets.metrics.stats.adjust_comparisons`, as the leaderboard does).

Printed, over the pairs:

- how often the two headline 95% intervals overlap (target: >= 95%),
- how often the paired comparison calls one guesser significantly better, overall and in any
  family of the table (target: <= 5%, on the table's "any"),
- the largest headline gap between two seeds, and the same numbers under the rule before issue
  30 (every family with a case in the mean, se from half the interval width), for contrast.

Only dimOS's single-image families are in this headline: the spatial families come from other
assets (multi-frame questions) and are not asked here. Exits non-zero when a target is missed;
``--smoke`` judges neither.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets.hashing import text_sha256
from eval_assets.jsonio import read_jsonl
from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.metrics.headline import FamilyMean
from eval_assets.metrics.stats import (
    WILSON_Z,
    PairedComparison,
    adjust_comparisons,
    paired_comparison,
    wilson_interval,
)
from eval_assets.metrics.vqa import VqaReport, VqaRow, frame_keys, vqa_accuracy
from eval_assets.model_runs.prompts import vqa_messages
from eval_assets.schemas.vqa import DATASET_CASES, Case
from eval_assets.vqa.labels import read_labels

REPO = Path(__file__).resolve().parent.parent
DEMO_DATASETS = REPO / ".eval_assets" / "datasets"
MAX_TOKENS = 16


@dataclass(frozen=True)
class Question:
    """One case as a guesser is asked it, with its gold answer."""

    recording: str
    case_id: str
    family: str
    frame_index: int
    question: str
    choices: list[str]
    answer: str
    image_stand_in: bytes  # the SHA-256 of the frame's image path in its dataset


def read_dataset(folder: Path) -> list[Question]:
    """Every case of one dataset folder (``cases.jsonl`` and its labels), its name the
    recording's."""
    cases = read_jsonl(folder / DATASET_CASES, Case)
    by_id = {c.id: c for c in cases}
    out = []
    for label in read_labels(folder, cases):
        case = by_id[label.id]
        stand_in = bytes.fromhex(text_sha256(f"{folder.name}/{case.image}"))
        out.append(Question(folder.name, case.id, label.family, label.frame_index, case.question,
                            list(case.choices), label.answer, stand_in))
    return out


def built_in_cases() -> list[Question]:
    """A small case set for ``--smoke``: 40 frames of yes/no, 3- and 4-choice questions, and a
    family of 3 cases (the kind the minimum n leaves out)."""
    out = []
    for frame in range(40):
        image = bytes.fromhex(text_sha256(f"smoke/{frame}"))
        for i in range(4):
            out.append(Question("smoke", f"f{frame}-p{i}", "presence", frame, f"thing {i}?",
                                ["yes", "no"], "yes" if (frame + i) % 2 else "no", image))
        out.append(Question("smoke", f"f{frame}-d", "horizontal_direction", frame, "where?",
                            ["left", "center", "right"], "left", image))
        out.append(Question("smoke", f"f{frame}-c", "object_count", frame, "how many?",
                            ["0", "1", "2", "3"], str(frame % 4), image))
        if frame < 3:
            out.append(Question("smoke", f"f{frame}-x", "closest_object", frame, "closest?",
                                ["a", "b"], "a", image))
    return out


def answer_all(model: RandomChoiceModel, questions: Sequence[Question]) -> VqaReport:
    """The guesser's reply to every question, scored."""
    rows = []
    for q in questions:
        reply = model.complete(vqa_messages(q.image_stand_in, q.question, q.choices), MAX_TOKENS)
        rows.append(VqaRow(case_id=q.case_id, family=q.family, recording=q.recording,
                           frame_index=q.frame_index, choices=q.choices, answer=q.answer,
                           prediction=reply.text))
    return vqa_accuracy(rows)


def old_headline(report: VqaReport) -> tuple[float, float, float]:
    """The headline as it was before issue 30: every family with a case, se from half widths."""
    scores = [s for s in report.by_family.values() if s.n and s.accuracy is not None]
    mean = math.fsum(s.accuracy or 0.0 for s in scores) / len(scores)
    se = math.sqrt(math.fsum((((s.ci_high or 0.0) - (s.ci_low or 0.0)) / 2 / WILSON_Z) ** 2
                             for s in scores)) / len(scores)
    return mean, max(0.0, mean - WILSON_Z * se), min(1.0, mean + WILSON_Z * se)


def new_headline(report: VqaReport) -> FamilyMean:
    """The headline in force: the report's prior-free mean over families
    (:func:`eval_assets.metrics.headline.headline` of its rows)."""
    mean = report.family_mean
    if mean is None:
        raise SystemExit("no family has enough cases for a headline; use a larger dataset")
    return mean


def comparison_table(a: VqaReport, b: VqaReport) -> list[PairedComparison]:
    """Guesser a against b, overall and per family, Holm-adjusted as the leaderboard does."""
    table = [paired_comparison("a", "b", frame_keys(a.rows),
                               [r.status == "correct" for r in a.rows],
                               [r.status == "correct" for r in b.rows])]
    for family in sorted({r.family for r in a.rows}):
        idx = [i for i, r in enumerate(a.rows) if r.family == family]
        table.append(paired_comparison(
            "a", "b", frame_keys([a.rows[i] for i in idx]),
            [a.rows[i].status == "correct" for i in idx],
            [b.rows[i].status == "correct" for i in idx], family=family))
    return adjust_comparisons(table, method="holm")


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _rate(hits: int, n: int) -> str:
    low, high = wilson_interval(hits, n)
    return f"{hits / n:6.1%} [{low:.1%}, {high:.1%}] ({hits}/{n})"


def main() -> int:
    """Run the pairs, print the rates, judge the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", type=Path, default=None,
                        help="dataset folders (cases.jsonl, labels.jsonl); default: the demo's, "
                             f"{DEMO_DATASETS}/*")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--min-overlap", type=float, default=0.95)
    parser.add_argument("--max-flagged", type=float, default=0.05)
    parser.add_argument("--smoke", action="store_true",
                        help="2 pairs on a built-in case set (targets not judged)")
    args = parser.parse_args()
    folders = args.datasets
    if folders is None and not args.smoke:
        folders = sorted(p for p in DEMO_DATASETS.glob("*") if (p / DATASET_CASES).is_file())
        if not folders:
            print(f"no dataset under {DEMO_DATASETS}: run `make demo` first, or pass "
                  "--datasets DIR ...", file=sys.stderr)
            return 2
    if args.smoke:
        args.pairs, args.min_overlap, args.max_flagged = 2, 0.0, 1.0
        questions = (built_in_cases() if not folders
                     else [q for f in folders for q in read_dataset(f)])
    else:
        missing = [str(f) for f in folders if not (f / DATASET_CASES).is_file()]
        if missing:
            print(f"not a dataset folder (no {DATASET_CASES}): {', '.join(missing)}",
                  file=sys.stderr)
            return 2
        questions = [q for f in folders for q in read_dataset(f)]
    recordings = sorted({q.recording for q in questions})
    sizes: dict[str, int] = {}
    for q in questions:
        sizes[q.family] = sizes.get(q.family, 0) + 1
    print(f"{args.pairs} pairs of random guessers (seeds 2k+1, 2k+2) on {len(questions):,} "
          f"cases of {len(recordings)} recording(s) ({', '.join(recordings)}); families: "
          + ", ".join(f"{f} {n:,}" for f, n in sorted(sizes.items(), key=lambda x: -x[1])))
    start = time.perf_counter()
    overlap = overlap_old = flagged_overall = flagged_any = raw_any = 0
    gaps, gaps_old = [], []
    for k in range(args.pairs):
        a = answer_all(RandomChoiceModel(seed=2 * k + 1), questions)
        b = answer_all(RandomChoiceModel(seed=2 * k + 2), questions)
        ha, hb = new_headline(a), new_headline(b)
        oa, ob = old_headline(a), old_headline(b)
        if ha.ci_low is None or ha.ci_high is None or hb.ci_low is None or hb.ci_high is None:
            raise SystemExit("a headline without an interval: a family has none")
        overlap += _overlap((ha.ci_low, ha.ci_high), (hb.ci_low, hb.ci_high))
        overlap_old += _overlap(oa[1:], ob[1:])
        gaps.append(abs(ha.mean - hb.mean))
        gaps_old.append(abs(oa[0] - ob[0]))
        table = comparison_table(a, b)
        flagged_overall += table[0].significant
        flagged_any += any(c.significant for c in table)
        raw_any += any(c.mcnemar_p < 0.05 for c in table if c.n_common)
        if k == 0:
            left = ", ".join(f"{f.family} ({f.n})" for f in ha.left_out) or "none"
            print(f"pair 1: headline {ha.mean:.1%} [{ha.ci_low:.1%}-{ha.ci_high:.1%}] vs "
                  f"{hb.mean:.1%} [{hb.ci_low:.1%}-{hb.ci_high:.1%}] over {ha.n_families} "
                  f"families (left out: {left}); before: {oa[0]:.1%} [{oa[1]:.1%}-{oa[2]:.1%}] "
                  f"vs {ob[0]:.1%} [{ob[1]:.1%}-{ob[2]:.1%}]; {len(table)} comparisons")
    elapsed = time.perf_counter() - start
    n = args.pairs
    for label, hits in (
            ("headline intervals overlap", overlap),
            ("  before (every family, half-width se)", overlap_old),
            ("paired comparison flags, overall (Holm)", flagged_overall),
            ("paired comparison flags, any in the table (Holm)", flagged_any),
            ("  any raw McNemar p < 0.05 in the table", raw_any)):
        print(f"{label + ':':<52}{_rate(hits, n)}")
    print(f"largest headline gap between two seeds: {max(gaps) * 100:.1f} points "
          f"(before: {max(gaps_old) * 100:.1f}); mean gap {sum(gaps) / n * 100:.1f} "
          f"(before: {sum(gaps_old) / n * 100:.1f})")
    print(f"{elapsed:.1f} s")
    failed = False
    if overlap / n < args.min_overlap:
        print(f"FAIL: intervals overlap in {overlap / n:.0%} of pairs, under "
              f"{args.min_overlap:.0%}")
        failed = True
    if flagged_any / n > args.max_flagged:
        print(f"FAIL: the comparison flags {flagged_any / n:.0%} of pairs, over "
              f"{args.max_flagged:.0%}")
        failed = True
    if not failed and not args.smoke:
        print(f"ok: overlap at least {args.min_overlap:.0%}, flags at most {args.max_flagged:.0%}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
